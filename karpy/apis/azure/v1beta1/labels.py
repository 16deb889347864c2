"""Well-known names of the Azure provider (`karpenter.azure.com` and AKS's `kubernetes.azure.com`):
labels, annotations, finalizer and the AKSNodeClass's status conditions, spelled as the upstream
Azure provider (github.com/Azure/karpenter-provider-azure, `pkg/apis/v1beta1/labels.go`) spells
them, so NodePools written for it select the same nodes here.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "karpenter.azure.com"
AKS_DOMAIN: Final = "kubernetes.azure.com"

# The NodeClass label on NodeClaims and Nodes (`<group>/<lowercase kind>`).
LABEL_NODECLASS: Final = "karpenter.azure.com/aksnodeclass"

# SKU labels (`karpenter.azure.com/sku-*`), derived from the Resource SKUs API record.
LABEL_SKU_NAME: Final = "karpenter.azure.com/sku-name"  # Standard_D4s_v5
LABEL_SKU_FAMILY: Final = "karpenter.azure.com/sku-family"  # D
LABEL_SKU_SERIES: Final = "karpenter.azure.com/sku-series"  # Ds_v5
LABEL_SKU_VERSION: Final = "karpenter.azure.com/sku-version"  # 5 ("1" when the name has none)
LABEL_SKU_CPU: Final = "karpenter.azure.com/sku-cpu"  # vCPUs
LABEL_SKU_MEMORY: Final = "karpenter.azure.com/sku-memory"  # MiB
LABEL_SKU_ACCELERATED_NETWORKING: Final = "karpenter.azure.com/sku-networking-accelerated"
LABEL_SKU_STORAGE_PREMIUM_CAPABLE: Final = "karpenter.azure.com/sku-storage-premium-capable"
LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE: Final = (
    "karpenter.azure.com/sku-storage-ephemeralos-maxsize"
)
LABEL_SKU_GPU_NAME: Final = "karpenter.azure.com/sku-gpu-name"
LABEL_SKU_GPU_MANUFACTURER: Final = "karpenter.azure.com/sku-gpu-manufacturer"
LABEL_SKU_GPU_COUNT: Final = "karpenter.azure.com/sku-gpu-count"
LABEL_PLACEMENT_SCOPE: Final = "karpenter.azure.com/placement-scope"
# Restricted: set by the provider only (no NodePool may set or constrain it); the node images'
# requirements match it.
LABEL_SKU_HYPERV_GENERATION: Final = "karpenter.azure.com/sku-hyperv-generation"

# AKS labels (`kubernetes.azure.com/*`).
AKS_LABEL_CPU: Final = "kubernetes.azure.com/sku-cpu"
AKS_LABEL_MEMORY: Final = "kubernetes.azure.com/sku-memory"
AKS_LABEL_CLUSTER: Final = "kubernetes.azure.com/cluster"
AKS_LABEL_MODE: Final = "kubernetes.azure.com/mode"
AKS_LABEL_SCALESET_PRIORITY: Final = "kubernetes.azure.com/scalesetpriority"
AKS_LABEL_PRIORITY: Final = "kubernetes.azure.com/priority"
AKS_LABEL_OS_SKU: Final = "kubernetes.azure.com/os-sku"
AKS_LABEL_FIPS_ENABLED: Final = "kubernetes.azure.com/fips_enabled"
AKS_LABEL_KUBELET_IDENTITY_CLIENT_ID: Final = "kubernetes.azure.com/kubelet-identity-client-id"

# `sku-hyperv-generation` values: the Hyper-V generations a size boots (its Resource SKU's
# `HyperVGenerations` capability, "V1", "V2" or "V1,V2"), which pick its node image.
HYPERV_GENERATION_V1: Final = "1"
HYPERV_GENERATION_V2: Final = "2"
MANUFACTURER_NVIDIA: Final = "nvidia"
MANUFACTURER_AMD: Final = "amd"
PLACEMENT_SCOPE_ZONAL: Final = "zonal"
PLACEMENT_SCOPE_REGIONAL: Final = "regional"
MODE_SYSTEM: Final = "system"
MODE_USER: Final = "user"
PRIORITY_REGULAR: Final = "regular"
PRIORITY_SPOT: Final = "spot"

# Label keys a NodePool may constrain although it does not define them (upstream's
# AzureWellKnownLabels): every instance type answers them.
WELL_KNOWN_LABELS: Final = frozenset(
    {
        LABEL_SKU_NAME,
        LABEL_SKU_FAMILY,
        LABEL_SKU_SERIES,
        LABEL_SKU_VERSION,
        LABEL_SKU_CPU,
        LABEL_SKU_MEMORY,
        AKS_LABEL_CPU,
        AKS_LABEL_MEMORY,
        LABEL_SKU_ACCELERATED_NETWORKING,
        LABEL_SKU_STORAGE_PREMIUM_CAPABLE,
        LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE,
        LABEL_SKU_GPU_NAME,
        LABEL_SKU_GPU_MANUFACTURER,
        LABEL_SKU_GPU_COUNT,
        LABEL_PLACEMENT_SCOPE,
        AKS_LABEL_CLUSTER,
        AKS_LABEL_MODE,
        AKS_LABEL_SCALESET_PRIORITY,
        AKS_LABEL_PRIORITY,
        AKS_LABEL_OS_SKU,
        AKS_LABEL_FIPS_ENABLED,
    }
)
# The values upstream accepts for some of them in NodePool requirements.
WELL_KNOWN_VALUES: Final[dict[str, frozenset[str]]] = {
    LABEL_SKU_ACCELERATED_NETWORKING: frozenset({"true", "false"}),
    LABEL_SKU_STORAGE_PREMIUM_CAPABLE: frozenset({"true", "false"}),
    LABEL_SKU_GPU_MANUFACTURER: frozenset({MANUFACTURER_NVIDIA, MANUFACTURER_AMD}),
    LABEL_PLACEMENT_SCOPE: frozenset({PLACEMENT_SCOPE_ZONAL, PLACEMENT_SCOPE_REGIONAL}),
    AKS_LABEL_MODE: frozenset({MODE_SYSTEM, MODE_USER}),
    AKS_LABEL_SCALESET_PRIORITY: frozenset({PRIORITY_REGULAR, PRIORITY_SPOT}),
    AKS_LABEL_PRIORITY: frozenset({PRIORITY_REGULAR, PRIORITY_SPOT}),
    AKS_LABEL_OS_SKU: frozenset({"Ubuntu", "AzureLinux", "Windows2022", "Windows2025"}),
    AKS_LABEL_FIPS_ENABLED: frozenset({"true"}),
}
# Keys no NodePool may set (the provider writes them per node). The kubernetes.azure.com domain is
# not restricted as a whole: users may set some of its labels (kubernetes.azure.com/ebpf-dataplane).
RESTRICTED_LABELS: Final = frozenset(
    {
        LABEL_SKU_HYPERV_GENERATION,
        "agentpool",
        "storageprofile",
        "storagetier",
        "accelerator",
        "kubernetes.azure.com/accelerator",
        "kubernetes.azure.com/agentpool",
        "kubernetes.azure.com/agentpool-family",
        "kubernetes.azure.com/availability-zone",
        "kubernetes.azure.com/network-policy",
        "kubernetes.azure.com/storageprofile",
        "kubernetes.azure.com/storagetier",
    }
)
RESTRICTED_LABEL_DOMAINS: Final = frozenset({GROUP})

# Annotations.
ANNOTATION_AKSNODECLASS_HASH: Final = "karpenter.azure.com/aksnodeclass-hash"
ANNOTATION_AKSNODECLASS_HASH_VERSION: Final = "karpenter.azure.com/aksnodeclass-hash-version"

# Finalizer on AKSNodeClasses.
FINALIZER_TERMINATION: Final = "karpenter.azure.com/termination"

# Azure tag keys karpy sets itself on VMs and NICs (`karpenter.azure.com_cluster` and friends:
# Azure tag names cannot contain '/', so upstream writes '_').
TAG_CLUSTER: Final = "karpenter.azure.com_cluster"
TAG_NODEPOOL: Final = "karpenter.sh_nodepool"
TAG_NODECLAIM: Final = "karpenter.sh_nodeclaim"
TAG_NODECLASS: Final = "karpenter.azure.com_aksnodeclass"
TAG_BILLING: Final = "compute.aks.billing"
TAG_BILLING_LINUX: Final = "linux"

# AKSNodeClass status conditions (Ready is the root condition).
CONDITION_IMAGES_READY: Final = "ImagesReady"
CONDITION_KUBERNETES_VERSION_READY: Final = "KubernetesVersionReady"
CONDITION_SUBNETS_READY: Final = "SubnetsReady"
CONDITION_VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
