"""Well-known label, annotation, taint and finalizer names of `karpenter.sh/v1`.

These strings are the API: Karpenter users' manifests, dashboards and scripts refer to them,
so they must match Karpenter's byte for byte.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "karpenter.sh"

# Kubernetes well-known node labels.
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_ARCH: Final = "kubernetes.io/arch"
LABEL_OS: Final = "kubernetes.io/os"
LABEL_INSTANCE_TYPE: Final = "node.kubernetes.io/instance-type"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION: Final = "topology.kubernetes.io/region"
LABEL_WINDOWS_BUILD: Final = "node.kubernetes.io/windows-build"
LABEL_EXCLUDE_FROM_EXTERNAL_LB: Final = "node.kubernetes.io/exclude-from-external-load-balancers"

# Karpenter labels.
LABEL_NODEPOOL: Final = "karpenter.sh/nodepool"
LABEL_CAPACITY_TYPE: Final = "karpenter.sh/capacity-type"
LABEL_NODE_REGISTERED: Final = "karpenter.sh/registered"
LABEL_NODE_INITIALIZED: Final = "karpenter.sh/initialized"
LABEL_DO_NOT_SYNC_TAINTS: Final = "karpenter.sh/do-not-sync-taints"

CAPACITY_TYPE_ON_DEMAND: Final = "on-demand"
CAPACITY_TYPE_SPOT: Final = "spot"
CAPACITY_TYPE_RESERVED: Final = "reserved"
CAPACITY_TYPES: Final = (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_RESERVED)
ARCH_AMD64: Final = "amd64"
ARCH_ARM64: Final = "arm64"

# Label keys a NodePool may constrain even when it does not define them.
WELL_KNOWN_LABELS: Final = frozenset(
    {
        LABEL_NODEPOOL,
        LABEL_TOPOLOGY_ZONE,
        LABEL_TOPOLOGY_REGION,
        LABEL_INSTANCE_TYPE,
        LABEL_ARCH,
        LABEL_OS,
        LABEL_CAPACITY_TYPE,
        LABEL_WINDOWS_BUILD,
    }
)
# Label keys no NodePool may set: the provider assigns them per node.
RESTRICTED_LABELS: Final = frozenset({LABEL_HOSTNAME})
RESTRICTED_LABEL_DOMAINS: Final = frozenset({GROUP})
# karpenter.sh keys users may still write in requirements.
ALLOWED_KARPENTER_LABELS: Final = frozenset({LABEL_CAPACITY_TYPE, LABEL_NODEPOOL})

# Deprecated keys and the keys they mean.
NORMALIZED_LABELS: Final = {
    "failure-domain.beta.kubernetes.io/zone": LABEL_TOPOLOGY_ZONE,
    "failure-domain.beta.kubernetes.io/region": LABEL_TOPOLOGY_REGION,
    "beta.kubernetes.io/arch": LABEL_ARCH,
    "beta.kubernetes.io/os": LABEL_OS,
    "beta.kubernetes.io/instance-type": LABEL_INSTANCE_TYPE,
}


def nodeclass_label_key(group: str, kind: str) -> str:
    """The label naming a node's NodeClass: `<group>/<lowercase kind>`
    (e.g. `karpenter.k8s.aws/ec2nodeclass`)."""
    return f"{group}/{kind.lower()}"


# Annotations.
ANNOTATION_DO_NOT_DISRUPT: Final = "karpenter.sh/do-not-disrupt"
ANNOTATION_NODEPOOL_HASH: Final = "karpenter.sh/nodepool-hash"
ANNOTATION_NODEPOOL_HASH_VERSION: Final = "karpenter.sh/nodepool-hash-version"
ANNOTATION_NODECLAIM_TERMINATION_TIMESTAMP: Final = "karpenter.sh/nodeclaim-termination-timestamp"
ANNOTATION_NODECLAIM_MIN_VALUES_RELAXED: Final = "karpenter.sh/nodeclaim-min-values-relaxed"
ANNOTATION_PROVIDER_COMPATIBILITY: Final = "compatibility.karpenter.sh/provider"
ANNOTATION_REQUESTED_DRA_DRIVERS: Final = "karpenter.sh/requested-dra-drivers"
ANNOTATION_PRICE_OVERLAY_APPLIED: Final = "karpenter.sh/price-overlay-applied"
ANNOTATION_CAPACITY_OVERLAY_APPLIED: Final = "karpenter.sh/capacity-overlay-applied"
ANNOTATION_POD_DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
# Karpenter's NodePool hash version: karpy computes Karpenter's hash (controllers/nodepool/hash.py),
# so hashes stamped by either are compared as they are.
NODEPOOL_HASH_VERSION: Final = "v3"

# Taints.
TAINT_DISRUPTED_KEY: Final = "karpenter.sh/disrupted"
TAINT_UNREGISTERED_KEY: Final = "karpenter.sh/unregistered"
TAINT_EFFECT_NO_SCHEDULE: Final = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE: Final = "NoExecute"
# Taints that come and go while a node boots; initialization waits for them to go.
TAINT_NOT_READY_KEY: Final = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE_KEY: Final = "node.kubernetes.io/unreachable"
TAINT_UNINITIALIZED_KEY: Final = "node.cloudprovider.kubernetes.io/uninitialized"
EPHEMERAL_TAINT_PREFIX: Final = "readiness.k8s.io/"

# Finalizers.
FINALIZER_TERMINATION: Final = "karpenter.sh/termination"

# Priority classes whose pods are drained last.
CRITICAL_PRIORITY_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})
