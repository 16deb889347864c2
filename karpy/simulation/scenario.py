"""Reading a scenario: real manifests in, a `SchedulingInput` out.

A scenario is any mix of Kubernetes objects in YAML or JSON files (multi-document, or `List`s).
Kinds the simulation uses are validated, then turned into scheduler inputs by
`karpy.state.inputs`, exactly as the provisioner turns the live cluster's objects; workloads
are expanded into the pods their controllers would create (named `<workload>-<index>`);
SchedulingConfigs (karpy's extension) constrain the NodePools and set the policies,
NodeOverlays adjust prices and capacities, as they do in a cluster (an overlay that conflicts
with another of the same weight is ignored with a warning), and CapacityBuffers add their
virtual pods (resolved from their PodTemplate or workload as the status controller resolves
them; one that cannot be resolved is left out with a warning); every other kind is skipped with
a warning, so manifests can be fed as they are.
Invalid input raises `ScenarioError` naming the file, the document and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from karpy.apis.autoscaling.v1beta1 import validate_capacitybuffer
from karpy.apis.errors import ValidationError
from karpy.apis.v1 import NodePool, validate_nodepool, validate_schedulingconfig
from karpy.scheduling import InstanceType, ResourceError, TaintError
from karpy.scheduling.engine import NodePoolTemplate, SchedulingInput
from karpy.scheduling.engine.model import MinValuesPolicy, PreferencePolicy
from karpy.simulation.catalogchoice import sized_for_nodepool
from karpy.simulation.documents import DEFAULT_MAX_PODS, Document, ScenarioError, read_documents
from karpy.state.inputs import (
    ClusterObjects,
    InputError,
    NodeClassKey,
    PodViews,
    build_input,
    nodepool_nodeclass,
    resolve,
    state_nodes,
    with_status,
)
from karpy.state.pods import node_name as pod_node_name
from karpy.state.pods import pod_key

__all__ = ["Scenario", "ScenarioError", "ScenarioObjects", "load_scenario", "read_documents"]

NODECLASS_KINDS = frozenset({"EC2NodeClass", "KWOKNodeClass", "AKSNodeClass"})
ChooseCatalog = Callable[[Mapping[str, str]], Sequence[InstanceType]]
"""Picks the catalogue from the scenario's NodeClass kinds (kind -> where first named)."""

WORKLOADS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet", "ReplicationController")
USED = frozenset(
    {
        "NodePool",
        "SchedulingConfig",
        "NodeOverlay",
        "Pod",
        "Node",
        "NodeClaim",
        "Namespace",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "StorageClass",
        "LimitRange",
        "EC2NodeClass",
        "KWOKNodeClass",
        "AKSNodeClass",
        "PodDisruptionBudget",
        "CapacityBuffer",
        "PodTemplate",
        *WORKLOADS,
    }
)


@dataclass(frozen=True)
class ScenarioObjects:
    """The scenario's objects as read (for `--disruption`, which replays changes on them)."""

    nodepools: list[NodePool]
    templates: list[NodePoolTemplate]
    nodes: list[dict[str, Any]]
    nodeclaims: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    """Bound and pending pods alike."""
    pdbs: list[dict[str, Any]]
    daemonsets: list[dict[str, Any]]
    namespaces: dict[str, dict[str, str]]
    configs: list[dict[str, Any]] = field(default_factory=list)
    """SchedulingConfigs, and each NodePool's NodeClass they match on."""
    nodeclasses: dict[str, NodeClassKey | None] = field(default_factory=dict)
    overlays: list[dict[str, Any]] = field(default_factory=list)
    """NodeOverlays."""
    buffers: list[dict[str, Any]] = field(default_factory=list)
    """CapacityBuffers with the status they resolved to, and the PodTemplates it names."""
    pod_templates: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    limit_ranges: list[Mapping[str, Any]] = field(default_factory=list)
    """LimitRanges: their defaults fill missing requests of pods made from templates."""
    claims: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    storage_classes: list[dict[str, Any]] = field(default_factory=list)
    """PersistentVolumeClaims, PersistentVolumes and StorageClasses (read from a cluster)."""


@dataclass
class Scenario:
    input: SchedulingInput
    warnings: list[str] = field(default_factory=list)
    objects: ScenarioObjects | None = None
    explain: Callable[[Mapping[str, str]], dict[str, str]] = dict
    """A plan's pod errors with the SchedulingConfigs that ruled pods out (`Inputs.explain`)."""


def _validate_aksnodeclass(doc: Document) -> tuple[int | None, int]:
    """An AKSNodeClass is checked against its CRD's schema and rules (as the apiserver would);
    its `maxPods` and `osDiskSizeGB` (defaulted) size the nodes of NodePools that use it."""
    from karpy.apis.azure.v1beta1 import validate_aksnodeclass

    try:
        spec = validate_aksnodeclass(doc.obj).spec
    except ValidationError as err:
        raise ScenarioError(f"{doc.where()}: {err}") from None
    return spec.max_pods, spec.os_disk_size_gb


def _require_name(doc: Document) -> None:
    if not doc.name:
        raise ScenarioError(f"{doc.where()}: metadata.name: Required value")


def _pod_from_template(doc: Document, index: int, *, daemon: bool = False) -> dict[str, Any]:
    spec = doc.obj.get("spec") or {}
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise ScenarioError(f"{doc.where()}: spec.template: Required value")
    meta = template.get("metadata") or {}
    name = f"{doc.name}-{index}"
    return {
        "metadata": {
            "name": name,
            "namespace": doc.namespace,
            "uid": f"{doc.namespace}/{name}",
            "labels": dict(meta.get("labels") or {}),
            "ownerReferences": [{"kind": doc.kind, "name": doc.name, "controller": True}],
            "creationTimestamp": (doc.obj.get("metadata") or {}).get("creationTimestamp") or "",
        },
        "spec": dict(template.get("spec") or {}),
    }


def _replicas(doc: Document) -> int:
    spec = doc.obj.get("spec") or {}
    if doc.kind == "Job":
        parallelism = spec.get("parallelism", 1)
        completions = spec.get("completions")
        value = parallelism if completions is None else min(parallelism, completions)
        field_name = "spec.parallelism"
    else:
        value = spec.get("replicas", 1)
        field_name = "spec.replicas"
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScenarioError(f"{doc.where()}: {field_name}: must be a non-negative integer")
    return value


def load_scenario(
    paths: Sequence[str],
    *,
    instance_types: Sequence[InstanceType] | ChooseCatalog,
    max_pods: int = DEFAULT_MAX_PODS,
    preference_policy: PreferencePolicy = "Respect",
    min_values_policy: MinValuesPolicy = "Strict",
    default_spread: Sequence[Mapping[str, Any]] = (),
) -> Scenario:
    """Read the files and build the scheduler's input; raise `ScenarioError` on bad input.
    `instance_types`: the catalogue, or what picks it from the NodeClass kinds the scenario
    names (kind -> where first named), once all are read. The policies are the settings'; a
    `default` SchedulingConfig in the scenario wins."""
    warnings: list[str] = []
    nodepools: list[tuple[Document, NodePoolTemplate]] = []
    provisioned: list[tuple[Document, NodePool]] = []
    kinds: dict[str, str] = {}
    models: list[NodePool] = []
    pdbs: list[dict[str, Any]] = []
    nodeclasses: dict[str, NodeClassKey | None] = {}
    aks_classes: dict[str, tuple[int | None, int]] = {}
    configs: dict[str, dict[str, Any]] = {}
    overlays: dict[str, dict[str, Any]] = {}
    pod_docs: list[tuple[Document, dict[str, Any]]] = []
    daemon_docs: list[Document] = []
    node_docs: list[Document] = []
    claim_docs: list[Document] = []
    namespaces: dict[str, dict[str, str]] = {}
    claims: dict[tuple[str, str], Mapping[str, Any]] = {}
    volumes: list[Mapping[str, Any]] = []
    classes: list[Mapping[str, Any]] = []
    limit_ranges: list[Mapping[str, Any]] = []
    seen_pools: set[str] = set()
    buffer_docs: list[Document] = []
    pod_templates: dict[tuple[str, str], dict[str, Any]] = {}
    workloads: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    for doc in read_documents(paths, used=USED, max_pods=max_pods, warnings=warnings):
        kind = doc.kind
        if not kind:
            raise ScenarioError(f"{doc.where()}: kind: Required value")
        if kind not in USED:
            warnings.append(f"{doc.where()}: skipped: karpy simulate does not use {kind} objects")
            continue
        _require_name(doc)
        if kind == "NodePool":
            try:
                model = validate_nodepool(doc.obj)
            except ValidationError as err:
                raise ScenarioError(f"{doc.where()}: {err}") from None
            if model.name in seen_pools:
                raise ScenarioError(f"{doc.where()}: metadata.name: duplicate NodePool")
            seen_pools.add(model.name)
            models.append(model)
            nodeclasses[model.name] = nodeclass = nodepool_nodeclass(doc.obj)
            if nodeclass is not None and nodeclass[1]:
                kinds.setdefault(nodeclass[1], doc.where())
            if model.is_static:  # as the provisioner: pods are never provisioned onto it
                warnings.append(f"{doc.where()}: static NodePool (spec.replicas): not provisioned")
                continue
            provisioned.append((doc, model))
        elif kind in NODECLASS_KINDS:
            if kind == "AKSNodeClass":
                aks_classes[doc.name] = _validate_aksnodeclass(doc)
            kinds.setdefault(kind, doc.where())
        elif kind == "SchedulingConfig":
            try:
                config = validate_schedulingconfig(doc.obj)
            except ValidationError as err:
                raise ScenarioError(f"{doc.where()}: {err}") from None
            if config.name in configs:
                raise ScenarioError(f"{doc.where()}: metadata.name: duplicate SchedulingConfig")
            configs[config.name] = config.to_dict()
        elif kind == "NodeOverlay":
            # NodeOverlays are rare in scenarios: their model is loaded for the first one
            from karpy.apis.v1alpha1 import validate_nodeoverlay

            try:
                overlay = validate_nodeoverlay(doc.obj)
            except ValidationError as err:
                raise ScenarioError(f"{doc.where()}: {err}") from None
            if overlay.name in overlays:
                raise ScenarioError(f"{doc.where()}: metadata.name: duplicate NodeOverlay")
            overlays[overlay.name] = overlay.to_dict()
        elif kind == "CapacityBuffer":
            try:
                validate_capacitybuffer(_namespaced(doc))
            except ValidationError as err:
                raise ScenarioError(f"{doc.where()}: {err}") from None
            buffer_docs.append(doc)
        elif kind == "PodTemplate":
            pod_templates[(doc.namespace, doc.name)] = _namespaced(doc)
        elif kind == "Pod":
            pod_docs.append((doc, _namespaced(doc)))
        elif kind == "DaemonSet":
            _pod_from_template(doc, 0)  # validates spec.template
            daemon_docs.append(doc)
        elif kind in WORKLOADS:
            group = str(doc.obj.get("apiVersion") or "").rpartition("/")[0]
            workloads[(doc.namespace, group, kind, doc.name)] = doc.obj
            for i in range(_replicas(doc)):
                pod = _pod_from_template(doc, i)
                if kind == "StatefulSet":
                    pod = _with_claim_templates(doc, pod, i, claims)
                pod_docs.append((doc, pod))
        elif kind == "Node":
            node_docs.append(doc)
        elif kind == "NodeClaim":
            claim_docs.append(doc)
        elif kind == "Namespace":
            namespaces[doc.name] = dict((doc.obj.get("metadata") or {}).get("labels") or {})
        elif kind == "PersistentVolumeClaim":
            claims[(doc.namespace, doc.name)] = _namespaced(doc)
        elif kind == "PersistentVolume":
            volumes.append(doc.obj)
        elif kind == "StorageClass":
            classes.append(doc.obj)
        elif kind == "LimitRange":
            limit_ranges.append(_namespaced(doc))
        elif kind == "PodDisruptionBudget":
            pdbs.append(_namespaced(doc))
    # the NodeClasses are all known now: the catalogue follows them
    types = instance_types(kinds) if callable(instance_types) else instance_types
    sized: dict[tuple[int | None, int], Sequence[InstanceType]] = {}
    for doc, model in provisioned:
        pool_types = sized_for_nodepool(types, nodeclasses.get(model.name), aks_classes, sized)
        try:
            nodepools.append((doc, NodePoolTemplate.from_nodepool(model.to_dict(), pool_types)))
        except (ValueError, TaintError) as err:
            raise ScenarioError(f"{doc.where()}: {err}") from None
    # what each object came from, named in errors only: (document, pod of a workload or "")
    where: dict[tuple[str, str], tuple[Document, str]] = {}
    pending: list[dict[str, Any]] = []
    bound: list[dict[str, Any]] = []
    for doc, raw in pod_docs:
        origin = (doc, "" if doc.kind == "Pod" else raw["metadata"]["name"])
        _check_pod(raw, origin)
        key = pod_key(raw)
        if ("Pod", key) in where:
            raise ScenarioError(f"{_at(origin)}: metadata.name: duplicate pod {key}")
        where[("Pod", key)] = origin
        (bound if pod_node_name(raw) else pending).append(raw)
    for doc in daemon_docs:
        where[("DaemonSet", f"{doc.namespace}/{doc.name}")] = (doc, "")
    for doc in node_docs:
        status = doc.obj.get("status") or {}
        if not (status.get("allocatable") or status.get("capacity")):
            raise ScenarioError(f"{doc.where()}: status.allocatable: Required value")
        where[("Node", doc.name)] = (doc, "")
    for doc in claim_docs:
        where[("Node", doc.name)] = (doc, "")
    node_names = {doc.name for doc in node_docs}
    for pod in bound:
        if pod_node_name(pod) not in node_names:
            warnings.append(
                f"pod {pod_key(pod)}: skipped: bound to node {pod_node_name(pod)!r}, "
                "which is not in the scenario"
            )
    if not nodepools:
        warnings.append("no NodePool in the scenario: nothing can be launched")
    buffers = _resolve_buffers(buffer_docs, pod_templates, workloads, warnings)
    objects = ClusterObjects(
        pending=pending,
        nodes=state_nodes(
            nodes=[dict(doc.obj) for doc in node_docs],
            nodeclaims=[dict(doc.obj) for doc in claim_docs],
            pods=bound,
        ),
        daemonsets=[_namespaced(doc) for doc in daemon_docs],
        claims=claims.values(),
        volumes=volumes,
        storage_classes=classes,
        limit_ranges=limit_ranges,
        # pods made from workload templates have not been through LimitRanger
        admitted=False,
        namespaces=namespaces,
        templates=[t for _, t in nodepools],
        configs=list(configs.values()),
        nodeclasses=nodeclasses,
        overlays=list(overlays.values()),
        buffers=buffers,
        pod_templates=pod_templates,
    )
    try:
        built = build_input(
            objects,
            views=PodViews(max_entries=0),  # each pod is viewed once: nothing to cache
            strict=True,
            preference_policy=preference_policy,
            min_values_policy=min_values_policy,
            default_spread=default_spread,
        )
    except InputError as err:
        found = where.get((err.kind, err.key))
        at = _at(found) if found else f"{err.kind} {err.key}"
        raise ScenarioError(f"{at}: {err.detail}") from None
    except ResourceError as err:
        raise ScenarioError(str(err)) from None
    if built.overlays is not None:
        warnings.extend(
            f"NodeOverlay {name} is ignored: {why}"
            for name, why in sorted(built.overlays.conflicts.items())
        )
    return Scenario(
        input=built.input,
        warnings=warnings,
        objects=ScenarioObjects(
            nodepools=models,
            templates=[t for _, t in nodepools],
            nodes=[dict(doc.obj) for doc in node_docs],
            nodeclaims=[dict(doc.obj) for doc in claim_docs],
            pods=[*bound, *pending],
            pdbs=pdbs,
            daemonsets=[_namespaced(doc) for doc in daemon_docs],
            namespaces=namespaces,
            configs=list(configs.values()),
            nodeclasses=nodeclasses,
            overlays=list(overlays.values()),
            buffers=buffers,
            pod_templates=pod_templates,
            limit_ranges=limit_ranges,
        ),
        explain=built.explain,
    )


def _resolve_buffers(
    docs: Sequence[Document],
    pod_templates: dict[tuple[str, str], dict[str, Any]],
    workloads: Mapping[tuple[str, str, str, str], Mapping[str, Any]],
    warnings: list[str],
) -> list[dict[str, Any]]:
    """Each CapacityBuffer with the status the controller would give it; the PodTemplates of
    `scalableRef` buffers join `pod_templates`. An unresolvable buffer is left out, said in a
    warning (in a cluster its status would say ReadyForProvisioning=False)."""
    out: list[dict[str, Any]] = []
    for doc in docs:
        buffer = _namespaced(doc)
        resolution = resolve(
            buffer,
            pod_template=lambda ns, name: pod_templates.get((ns, name)),
            workload=lambda ns, group, kind, name: workloads.get((ns, group, kind, name)),
        )
        if resolution.error is not None:
            warnings.append(f"{doc.where()}: not ready for provisioning: {resolution.error}")
            continue
        resolved, template = with_status(buffer, resolution)
        key = (doc.namespace, str(resolution.template_name))
        pod_templates.setdefault(key, dict(template))
        out.append(dict(resolved))
    return out


def _at(origin: tuple[Document, str]) -> str:
    """`file: document N (Kind 'name')`, and the pod's name for a workload's pods."""
    doc, pod = origin
    return f"{doc.where()} pod {pod}" if pod else doc.where()


def _namespaced(doc: Document) -> dict[str, Any]:
    """The object with its namespace filled in (`default` when the manifest leaves it out);
    the object itself when it names its namespace already (exports always do)."""
    meta = doc.obj.get("metadata") or {}
    if type(doc.obj) is dict and meta.get("namespace") == doc.namespace:
        return doc.obj
    return {**doc.obj, "metadata": {**meta, "namespace": doc.namespace}}


def _check_pod(raw: Mapping[str, Any], origin: tuple[Document, str]) -> None:
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        raise ScenarioError(f"{_at(origin)}: spec: Required value")
    if not spec.get("containers"):
        raise ScenarioError(f"{_at(origin)}: spec.containers: Required value")


def _with_claim_templates(
    doc: Document,
    pod: dict[str, Any],
    index: int,
    claims: dict[tuple[str, str], Mapping[str, Any]],
) -> dict[str, Any]:
    templates = (doc.obj.get("spec") or {}).get("volumeClaimTemplates") or ()
    if not templates:
        return pod
    spec = dict(pod["spec"])
    vols = list(spec.get("volumes") or ())
    for t in templates:
        tname = str((t.get("metadata") or {}).get("name") or "")
        claim_name = f"{tname}-{doc.name}-{index}"
        key = (doc.namespace, claim_name)
        if key not in claims:
            claims[key] = {
                "metadata": {"name": claim_name, "namespace": doc.namespace},
                "spec": dict(t.get("spec") or {}),
            }
        vols.append({"name": tname, "persistentVolumeClaim": {"claimName": claim_name}})
    spec["volumes"] = vols
    return {**pod, "spec": spec}
