"""Cluster objects in, the scheduling engine's input out: the one place both planners build it.

The provisioner feeds this from the informer cache and `karpy simulate` from scenario files;
both hand over plain collections (pending pods, existing nodes, DaemonSets, claims, volumes,
StorageClasses, namespaces, NodePool templates, SchedulingConfigs, NodeOverlays, CapacityBuffers),
so the same objects give the same plan. CapacityBuffers add their virtual pods to the pods to
place. Volume topology, DaemonSet overhead, existing nodes, NodePool usage,
the SchedulingConfigs' requirements and parameters and the NodeOverlays' prices and capacities
are applied here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from karpy.scheduling.engine.model import (
    ExistingNode,
    MinValuesPolicy,
    NodePoolTemplate,
    PreferencePolicy,
    SchedulingInput,
)
from karpy.scheduling.overlays import overlays_of
from karpy.scheduling.pods import PodError, PodView
from karpy.scheduling.resources import ResourceError, ResourceMap, add
from karpy.scheduling.taints import TaintError
from karpy.state import pods as podutil
from karpy.state.inputs.buffers import virtual_pods
from karpy.state.inputs.configs import (
    Explainer,
    NodeClassKey,
    constrain_templates,
    guardrails,
    parameters,
    with_default_spread,
)
from karpy.state.inputs.limitranges import LimitRangeDefaults
from karpy.state.inputs.nodes import existing_node
from karpy.state.inputs.overlays import OverlaidTemplates, overlay_templates
from karpy.state.inputs.pods import PodViews, daemonset_pod
from karpy.state.inputs.volumes import VolumeTopology
from karpy.state.statenode import StateNode

__all__ = [
    "DRA_UNSUPPORTED",
    "NODES_RESOURCE",
    "ClusterObjects",
    "InputError",
    "Inputs",
    "build_input",
    "nodepool_usage",
]

JSON = Mapping[str, Any]
NODES_RESOURCE = "nodes"
_UNREADABLE = (PodError, ResourceError, TaintError, ValueError)
DRA_UNSUPPORTED = (
    "spec.resourceClaims: dynamic resource allocation (DRA) is not supported yet, "
    "the pod is left to kube-scheduler"
)


class InputError(ValueError):
    """An object cannot be turned into scheduler input (strict builds only)."""

    def __init__(self, kind: str, key: str, detail: str) -> None:
        super().__init__(f"{kind} {key}: {detail}")
        self.kind = kind
        self.key = key
        self.detail = detail


@dataclass(frozen=True, kw_only=True)
class ClusterObjects:
    """What a plan is made from, as plain collections of API objects (never mutated)."""

    pending: Sequence[JSON]
    """Pods to place."""
    nodes: Sequence[StateNode] = ()
    """Existing nodes with their bound (and planned) pods; those marked for deletion take none."""
    daemonsets: Sequence[JSON] = ()
    claims: Iterable[JSON] = ()
    volumes: Iterable[JSON] = ()
    storage_classes: Iterable[JSON] = ()
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    templates: Sequence[NodePoolTemplate] = ()
    """One per NodePool pods may go to (`NodePoolTemplate.from_nodepool` with its types)."""
    configs: Sequence[JSON] = ()
    """SchedulingConfig objects (karpy's extension); none leaves everything as it was."""
    nodeclasses: Mapping[str, NodeClassKey | None] = field(default_factory=dict)
    """Each template's NodeClass (NodePool name -> (group, kind, name)), which configs match."""
    overlays: Sequence[JSON] = ()
    """NodeOverlay objects (`karpenter.sh/v1alpha1`); none leaves the instance types as they are."""
    limit_ranges: Sequence[JSON] = ()
    """LimitRanges: their container defaults fill DaemonSet containers' missing requests."""
    buffers: Sequence[JSON] = ()
    """CapacityBuffers: those ready for provisioning add virtual pods of their template."""
    pod_templates: Mapping[tuple[str, str], JSON] = field(default_factory=dict)
    """PodTemplates by (namespace, name): the buffers' chunks."""
    admitted: bool = True
    """The pending pods went through the API server's admission (LimitRanger); False for pods
    `karpy simulate` makes from workload templates, which then get the defaults too."""


@dataclass(frozen=True)
class Inputs:
    input: SchedulingInput
    errors: dict[str, str]
    """Pending pods left out (`namespace/name` -> why), e.g. a claim that does not exist or a
    pod asking for DRA devices."""
    explainer: Explainer | None = None
    """Names the SchedulingConfigs that kept pods off NodePools (see `explain`)."""
    overlays: OverlaidTemplates | None = None
    """Which NodeOverlays applied and which conflicted (None: there were none)."""
    virtual: frozenset[str] = frozenset()
    """Keys of the CapacityBuffers' virtual pods among the input's pods (never in the API)."""

    def explain(self, errors: Mapping[str, str]) -> dict[str, str]:
        """A plan's pod errors, each followed by the configs that ruled the pod out of a NodePool
        it would otherwise fit."""
        out = self.explainer.explain(errors) if self.explainer is not None else dict(errors)
        return {**out, **self.errors}


def nodepool_usage(nodes: Iterable[StateNode]) -> dict[str, ResourceMap]:
    """Capacity of each NodePool's nodes, plus `nodes` (their count): what limits count."""
    totals: dict[str, ResourceMap] = {}
    for n in nodes:
        pool = n.nodepool
        if not pool:
            continue
        acc = add(totals.get(pool, {NODES_RESOURCE: 0}), n.capacity)
        acc[NODES_RESOURCE] = acc.get(NODES_RESOURCE, 0) + 1
        totals[pool] = acc
    return totals


def build_input(
    objects: ClusterObjects,
    *,
    views: PodViews | None = None,
    strict: bool = False,
    preference_policy: PreferencePolicy = "Respect",
    min_values_policy: MinValuesPolicy = "Strict",
    default_spread: Sequence[Mapping[str, Any]] = (),
) -> Inputs:
    """The engine's input for `objects`. Unreadable objects are left out (pending pods are
    reported in `errors`); with `strict` the first one raises `InputError` instead. The policies
    and the cluster-default spread constraints (`DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS`) are the
    settings'; the `default` SchedulingConfig's win over them."""
    views = views if views is not None else PodViews()
    params = parameters(objects.configs)
    spread = params.spread or tuple(default_spread)
    rails = guardrails(objects.configs)
    overlaid: OverlaidTemplates | None = None
    base = list(objects.templates)
    if objects.overlays:
        readable, invalid = overlays_of(objects.overlays)
        if strict and invalid:
            name, why = sorted(invalid.items())[0]
            raise InputError("NodeOverlay", name, why)
        overlaid = overlay_templates(base, readable)
        base = overlaid.templates
    templates, dropped = constrain_templates(base, objects.nodeclasses, rails)
    topology = VolumeTopology(
        claims=objects.claims, volumes=objects.volumes, classes=objects.storage_classes
    )
    limits = LimitRangeDefaults(objects.limit_ranges)
    errors: dict[str, str] = {}
    pending: list[PodView] = []
    buffered = virtual_pods(objects.buffers, objects.pod_templates) if objects.buffers else []
    virtual: set[str] = set()
    for chunk in buffered:
        try:
            view = views.view(limits.apply(with_default_spread(chunk, spread)))
        except _UNREADABLE as err:
            if strict:
                raise InputError("CapacityBuffer", podutil.pod_key(chunk), str(err)) from None
            continue
        pending.append(view)
        virtual.add(view.key)
    for pod in objects.pending:
        if _claims_devices(pod):
            # left out even in strict builds: the pod is valid, karpy only cannot place it yet
            errors[podutil.pod_key(pod)] = DRA_UNSUPPORTED
            continue
        try:
            pod = with_default_spread(pod, spread)
            if not objects.admitted:
                pod = limits.apply(pod)
            pending.append(views.view(pod, volume_terms=topology.terms(pod)))
        except _UNREADABLE as err:
            if strict:
                raise InputError("Pod", podutil.pod_key(pod), str(err)) from None
            errors[podutil.pod_key(pod)] = str(err)
    daemons: list[PodView] = []
    for ds in objects.daemonsets:
        try:
            daemons.append(views.view(limits.apply(daemonset_pod(ds)), daemon=True))
        except _UNREADABLE as err:
            if strict:
                raise InputError("DaemonSet", podutil.pod_key(ds), str(err)) from None
    existing: list[ExistingNode] = []
    for node in objects.nodes:
        if node.marked_for_deletion:
            continue
        if strict:
            _check_pods(node, views)
            try:
                existing.append(existing_node(node, views, strict=True))
            except _UNREADABLE as err:
                raise InputError("Node", node.name, str(err)) from None
        else:
            existing.append(existing_node(node, views))
    return Inputs(
        input=SchedulingInput(
            pods=pending,
            templates=templates,
            existing_nodes=existing,
            daemonset_pods=daemons,
            namespace_labels=objects.namespaces,
            pool_usage=nodepool_usage(objects.nodes),
            preference_policy=params.preference_policy or preference_policy,
            min_values_policy=params.min_values_policy or min_values_policy,
        ),
        errors=errors,
        explainer=Explainer(
            pods=pending,
            templates=objects.templates,
            nodeclasses=objects.nodeclasses,
            rails=rails,
            dropped=dropped,
        )
        if rails
        else None,
        overlays=overlaid,
        virtual=frozenset(virtual),
    )


def _claims_devices(pod: JSON) -> bool:
    """Whether the pod asks for DRA devices: Karpenter ignores such pods, and karpy cannot know
    which nodes a ResourceClaim's devices would be on, so any plan for it could be wrong."""
    return bool((pod.get("spec") or {}).get("resourceClaims"))


def _check_pods(node: StateNode, views: PodViews) -> None:
    for pod in node.pods + node.planned:
        try:
            views.view(pod)
        except _UNREADABLE as err:
            raise InputError("Pod", podutil.pod_key(pod), str(err)) from None
