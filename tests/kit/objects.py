"""The builders of `tests.kit` (pods, nodes, NodePools, NodeClaims, NodeClasses, volumes,
claims, StorageClasses, DaemonSets) and the readers of their status conditions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

JSON = dict[str, Any]

KWOK_NODECLASS_REF: Final = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass"}
LINUX: Final = ({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},)
LINUX_AMD64_ON_DEMAND: Final = (
    *LINUX,
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
)


def kwok_nodeclass(name: str = "default", *, delay: str | None = None) -> JSON:
    """A KWOKNodeClass; `delay` is its `nodeRegistrationDelay`."""
    spec: JSON = {"nodeRegistrationDelay": delay} if delay is not None else {}
    return {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def ec2nodeclass(name: str = "default", *, discovery: str = "c") -> JSON:
    """An EC2NodeClass on AL2023 whose subnets and security groups carry the
    `karpenter.sh/discovery: <discovery>` tag."""
    tags = {"tags": {"karpenter.sh/discovery": discovery}}
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [dict(tags)],
            "securityGroupSelectorTerms": [dict(tags)],
        },
    }


def nodepool(
    name: str = "pool",
    *,
    nodeclass: str = "default",
    kind: str = "KWOKNodeClass",
    group: str = "karpenter.kwok.sh",
    requirements: Sequence[Mapping[str, Any]] = LINUX,
    consolidate_after: str = "30s",
    policy: str = "WhenEmpty",
    budgets: Sequence[Mapping[str, Any]] | None = None,
    taints: Sequence[Mapping[str, Any]] | None = None,
    startup_taints: Sequence[Mapping[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None,
    limits: Mapping[str, Any] | None = None,
    weight: int | None = None,
    expire_after: str | None = None,
    ready: bool = False,
) -> JSON:
    """A NodePool of linux nodes on a KWOKNodeClass, consolidating when empty after 30 s;
    `ready` gives it the status its controller writes once its NodeClass is ready (only unit
    tests that skip the controller need it)."""
    template_spec: JSON = {
        "nodeClassRef": {"group": group, "kind": kind, "name": nodeclass},
        "requirements": [dict(r) for r in requirements],
    }
    if taints:
        template_spec["taints"] = list(taints)
    if startup_taints:
        template_spec["startupTaints"] = list(startup_taints)
    if expire_after:
        template_spec["expireAfter"] = expire_after
    template: JSON = {"spec": template_spec}
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    disruption: JSON = {"consolidationPolicy": policy, "consolidateAfter": consolidate_after}
    if budgets is not None:
        disruption["budgets"] = list(budgets)
    spec: JSON = {"template": template, "disruption": disruption}
    if limits:
        spec["limits"] = dict(limits)
    if weight is not None:
        spec["weight"] = weight
    obj: JSON = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }
    if ready:
        obj["status"] = {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        }
    return obj


def schedulingconfig(
    name: str = "default",
    *,
    nodeclass: str | None = "default",
    kind: str = "KWOKNodeClass",
    group: str = "karpenter.kwok.sh",
    requirements: Sequence[Mapping[str, Any]] = LINUX_AMD64_ON_DEMAND[1:],
    **parameters: Any,
) -> JSON:
    """A SchedulingConfig (karpy's extension): by default amd64 and on-demand for the NodePools
    of the `default` KWOKNodeClass (`nodeclass=None`: every NodePool); `parameters` are spec
    fields in API spelling (`batchIdleDuration="5s"`)."""
    spec: JSON = {"requirements": [dict(r) for r in requirements], **parameters}
    if nodeclass is not None:
        spec["nodeClassRef"] = {"group": group, "kind": kind, "name": nodeclass}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "SchedulingConfig",
        "metadata": {"name": name},
        "spec": spec,
    }


def nodeoverlay(
    name: str = "overlay",
    *,
    requirements: Sequence[Mapping[str, Any]] = (),
    weight: int | None = None,
    **spec: Any,
) -> JSON:
    """A NodeOverlay (`karpenter.sh/v1alpha1`); `spec` adds fields in API spelling
    (`priceAdjustment="-50%"`, `capacity={"example.com/fuse": "1"}`)."""
    body: JSON = {"requirements": [dict(r) for r in requirements], **spec}
    if weight is not None:
        body["weight"] = weight
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": body,
    }


def podtemplate(
    name: str,
    namespace: str = "default",
    *,
    cpu: str = "1",
    labels: Mapping[str, str] | None = None,
) -> JSON:
    """A PodTemplate of one container requesting `cpu` (a CapacityBuffer's chunk)."""
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "template": {
            "metadata": {"labels": dict(labels or {"app": name})},
            "spec": {
                "containers": [
                    {"name": "pause", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
                ]
            },
        },
    }


def capacitybuffer(name: str, namespace: str = "default", **spec: Any) -> JSON:
    """A CapacityBuffer (`autoscaling.x-k8s.io/v1beta1`); `spec` in API spelling
    (`podTemplateRef={"name": "t"}`, `replicas=3`)."""
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }


def claim_spec(**extra: Any) -> JSON:
    """A NodeClaim spec of linux nodes on the `default` KWOKNodeClass, plus `extra` fields."""
    return {
        "nodeClassRef": {**KWOK_NODECLASS_REF, "name": "default"},
        "requirements": [dict(r) for r in LINUX],
        **extra,
    }


def nodeclaim(
    name: str,
    *,
    pool: str | None = "pool",
    nodeclass: str = "default",
    kind: str = "KWOKNodeClass",
    group: str = "karpenter.kwok.sh",
    requirements: Sequence[Mapping[str, Any]] = LINUX,
    requests: Mapping[str, str] | None = None,
    startup_taints: Sequence[Mapping[str, Any]] | None = None,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    deleted: str | None = None,
    status: JSON | None = None,
) -> JSON:
    """A NodeClaim of NodePool `pool` (None: no NodePool label) on KWOKNodeClass `nodeclass`
    (or a NodeClass of `kind` in `group`); `labels` are added to its NodePool label; `deleted`
    is its deletion timestamp."""
    meta: JSON = {"name": name}
    all_labels = {**({"karpenter.sh/nodepool": pool} if pool is not None else {}), **(labels or {})}
    if all_labels:
        meta["labels"] = all_labels
    if deleted:
        meta["deletionTimestamp"] = deleted
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: JSON = {
        "nodeClassRef": {"group": group, "kind": kind, "name": nodeclass},
        "requirements": [dict(r) for r in requirements],
    }
    if requests is not None:
        spec["resources"] = {"requests": dict(requests)}
    if startup_taints:
        spec["startupTaints"] = list(startup_taints)
    claim: JSON = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": meta,
        "spec": spec,
    }
    if status is not None:
        claim["status"] = status
    return claim


def ready_claim_conditions(stamp: str) -> list[JSON]:
    """The conditions of a NodeClaim that launched, registered and initialized at `stamp`."""
    return [
        {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": stamp}
        for t in ("Launched", "Registered", "Initialized", "Ready")
    ]


def pod(
    name: str = "p",
    namespace: str = "default",
    *,
    node: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: JSON | None = None,
    priority_class: str | None = None,
    tolerations: list[JSON] | None = None,
    grace: int | None = 30,
    volumes: list[JSON] | None = None,
    claims: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    created: str | None = None,
    deleted: str | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> JSON:
    """A pod of one pause container; bound to `node` unless it is None.

    `claims` maps volume names to the PersistentVolumeClaims they mount (at `/<volume>`);
    `grace=None` leaves `terminationGracePeriodSeconds` unset; `created` and `deleted` are the
    creation and deletion timestamps; `spec` adds spec fields (affinity, nodeSelector, ...) as
    given; `status` is set as given (the API server leaves it to the kubelet, so only unit tests
    give it)."""
    meta: JSON = {"name": name, "namespace": namespace, "labels": labels or {"app": name}}
    if created:
        meta["creationTimestamp"] = created
    if deleted:
        meta["deletionTimestamp"] = deleted
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [owner]
    container: JSON = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if requests:
        container["resources"] = {"requests": dict(requests)}
    if claims:
        container["volumeMounts"] = [{"name": v, "mountPath": f"/{v}"} for v in claims]
        volumes = [
            *(volumes or ()),
            *({"name": v, "persistentVolumeClaim": {"claimName": c}} for v, c in claims.items()),
        ]
    pod_spec: JSON = {"containers": [container]}
    if grace is not None:
        pod_spec["terminationGracePeriodSeconds"] = grace
    if node:
        pod_spec["nodeName"] = node
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    if tolerations:
        pod_spec["tolerations"] = tolerations
    if volumes:
        pod_spec["volumes"] = volumes
    pod_spec.update(spec or {})
    obj: JSON = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
    if status is not None:
        obj["status"] = dict(status)
    return obj


def pdb(
    name: str,
    namespace: str = "default",
    *,
    selector: Mapping[str, Any] | None,
    allowed: int | None = None,
    min_available: int | str | None = None,
    unhealthy_policy: str | None = None,
) -> JSON:
    """A PodDisruptionBudget; `allowed` sets `status.disruptionsAllowed` (the disruption
    controller's output, so only unit tests give it). `selector=None` is kept as an explicit null.
    """
    spec: JSON = {"selector": None if selector is None else dict(selector)}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if unhealthy_policy:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_policy
    obj: JSON = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if allowed is not None:
        obj["status"] = {"disruptionsAllowed": allowed}
    return obj


def node(
    name: str,
    *,
    provider_id: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] | None = None,
    status: Mapping[str, Any] | None = None,
) -> JSON:
    """A Node; `status` is set as given (against an API server it is the kubelet's: see
    `kubetest.node_status`)."""
    meta: JSON = {"name": name, "labels": dict(labels or {})}
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: JSON = {}
    if provider_id:
        spec["providerID"] = provider_id
    if taints:
        spec["taints"] = list(taints)
    obj: JSON = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec}
    if status is not None:
        obj["status"] = dict(status)
    return obj


def pv(
    name: str,
    *,
    storage: str = "1Gi",
    storage_class: str = "standard",
    csi_driver: str = "ebs.csi.aws.com",
    zone: str | Sequence[str] | None = None,
    claim: Mapping[str, Any] | None = None,
) -> JSON:
    """A CSI PersistentVolume, pinned to `zone` (or any of several) when given; `claim` (a
    PersistentVolumeClaim as served, with its uid) binds it, as a provisioner would, and keeps
    it when the claim goes (`Retain`)."""
    spec: JSON = {
        "capacity": {"storage": storage},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "csi": {"driver": csi_driver, "volumeHandle": f"vol-{name}"},
    }
    if claim is not None:
        meta = claim["metadata"]
        spec["persistentVolumeReclaimPolicy"] = "Retain"
        spec["claimRef"] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        }
    if zone:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": [zone] if isinstance(zone, str) else list(zone),
                            }
                        ]
                    }
                ]
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
    }


def pvc(
    name: str,
    namespace: str = "default",
    *,
    storage: str = "1Gi",
    storage_class: str | None = None,
    volume: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> JSON:
    """A ReadWriteOnce PersistentVolumeClaim; `volume` binds it (`spec.volumeName`);
    `storage_class=None` leaves the class unset (the default class applies)."""
    meta: JSON = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: JSON = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def storage_class(
    name: str,
    *,
    zones: Sequence[str] | None = None,
    mode: str = "WaitForFirstConsumer",
    default: bool = False,
    provisioner: str = "example.csi",
) -> JSON:
    """A StorageClass; `zones` become its `allowedTopologies`, `default` its is-default-class
    annotation."""
    meta: JSON = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta,
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones is not None:
        obj["allowedTopologies"] = [
            {
                "matchLabelExpressions": [
                    {"key": "topology.kubernetes.io/zone", "values": list(zones)}
                ]
            }
        ]
    return obj


def daemonset(
    name: str,
    namespace: str = "kube-system",
    *,
    requests: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = ({"operator": "Exists"},),
) -> JSON:
    """A DaemonSet of one container tolerating every taint (as node agents do)."""
    container: JSON = {"name": "d", "image": "registry.k8s.io/pause:3.10"}
    if requests:
        container["resources"] = {"requests": dict(requests)}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "tolerations": [dict(t) for t in tolerations],
                    "containers": [container],
                },
            },
        },
    }


def served(obj: JSON, *, rv: str = "1", uid: str | None = None) -> JSON:
    """`obj` as the API server returns it: with a `resourceVersion` and a `uid` (default: its
    name). Returns `obj`, changed in place."""
    meta = obj["metadata"]
    meta["resourceVersion"] = rv
    meta["uid"] = uid if uid is not None else meta["name"]
    return obj


def conditions(obj: Mapping[str, Any]) -> dict[str, JSON]:
    """An object's status conditions by type."""
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def status_of(obj: Mapping[str, Any], type_: str) -> str | None:
    found = conditions(obj).get(type_)
    return None if found is None else str(found["status"])
