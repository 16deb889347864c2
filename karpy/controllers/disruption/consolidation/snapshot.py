"""The immutable picture of the cluster a consolidation search works on.

Built on the event loop from cluster state (or by `karpy simulate --disruption` from scenario
files), then handed to a worker thread: nothing in it changes while the search runs. The
scheduling engine's view of every node and pending pod is built here once, through
`karpy.state.inputs` (the provisioner's one source of truth), so each simulation only picks
which nodes stay and which pods move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from karpy.apis.v1 import NodePool
from karpy.apis.v1.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE
from karpy.controllers.disruption.candidates import PdbLimits
from karpy.scheduling.engine import ExistingNode, NodePoolTemplate, SchedulingInput
from karpy.scheduling.engine.model import PreferencePolicy
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import PodError, PodView
from karpy.scheduling.resources import CPU, ResourceMap
from karpy.state import StateNode
from karpy.state.inputs import (
    ClusterObjects,
    NodeClassKey,
    PodViews,
    VolumeError,
    VolumeTopology,
    build_input,
)

__all__ = ["Snapshot", "build_snapshot", "node_price"]

JSON = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """Nodes with their pods, NodePools with their instance types, PDB headroom, and the
    engine's input for the whole cluster (every node existing, the pending pods to place)."""

    nodes: tuple[StateNode, ...]
    nodepools: Mapping[str, NodePool]
    templates: Mapping[str, NodePoolTemplate]
    pdbs: PdbLimits
    now: datetime
    base: SchedulingInput
    """Every node not marked for deletion as an `ExistingNode`, the pending pods as pods."""
    existing: Mapping[str, ExistingNode]
    """`base.existing_nodes` by node name."""
    views: PodViews
    in_flight: frozenset[str] = frozenset()
    """Nodes (by key) a disruption command is acting on already."""
    spot_to_spot: bool = False
    """The `SpotToSpotConsolidation` feature gate."""
    min_savings: float = 0.0
    """Share of the candidates' price a replacement must save (0: strictly cheaper, as
    Karpenter's price rule)."""
    unreadable: Mapping[str, str] = field(default_factory=dict)
    free: Mapping[str, ResourceMap] = field(default_factory=dict)
    """Initialized nodes' allocatable minus their pods' requests (never negative), by name."""
    roomiest: tuple[str, ...] = ()
    """Names of `free`, most free CPU first."""
    repelling: bool = False
    """Some existing pod has pod anti-affinity: moving pods may be kept off nodes by pods
    anywhere in its topology domain, so no simulation may leave nodes out."""

    volumes: VolumeTopology = field(default_factory=VolumeTopology)
    virtual: frozenset[str] = frozenset()
    """Keys of the CapacityBuffers' virtual pods in `base.pods`: unlike pending pods, which the
    provisioner owns, they must find room in every simulation, so consolidation keeps the
    buffers' room (and no more)."""

    def moving_views(self, pods: Sequence[JSON]) -> list[PodView]:
        """The engine's views of pods that would move, with their volumes' topology (a pod
        whose volume pins it to a zone must stay in that zone); unreadable ones left out."""
        out: list[PodView] = []
        for pod in pods:
            try:
                out.append(self.views.view(pod, volume_terms=self.volumes.terms(pod)))
            except (PodError, VolumeError, ValueError):
                continue
        return out


def node_price(node: StateNode, template: NodePoolTemplate | None) -> float | None:
    """The hourly price of the offering a node runs on (its type, zone and capacity type in
    its NodePool's instance types), or None when it is not among them."""
    if template is None:
        return None
    labels = node.labels
    name = labels.get(LABEL_INSTANCE_TYPE)
    zone = labels.get(LABEL_TOPOLOGY_ZONE)
    capacity_type = labels.get(LABEL_CAPACITY_TYPE)
    if not name or not zone or not capacity_type:
        return None
    for it in template.instance_types:
        if it.name == name:
            return _offering_price(it, zone, capacity_type)
    return None


def _offering_price(it: InstanceType, zone: str, capacity_type: str) -> float | None:
    for o in it.offerings:
        if o.zone == zone and o.capacity_type == capacity_type:
            return o.price
    return None


def build_snapshot(
    *,
    nodes: Sequence[StateNode],
    nodepools: Mapping[str, NodePool],
    templates: Sequence[NodePoolTemplate],
    pdbs: Sequence[JSON] = (),
    pending: Sequence[JSON] = (),
    daemonsets: Sequence[JSON] = (),
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
    claims: Sequence[JSON] = (),
    volumes: Sequence[JSON] = (),
    storage_classes: Sequence[JSON] = (),
    now: datetime,
    in_flight: frozenset[str] = frozenset(),
    spot_to_spot: bool = False,
    min_savings: float = 0.0,
    views: PodViews | None = None,
    preference_policy: PreferencePolicy = "Respect",
    configs: Sequence[JSON] = (),
    nodeclasses: Mapping[str, NodeClassKey | None] | None = None,
    overlays: Sequence[JSON] = (),
    buffers: Sequence[JSON] = (),
    pod_templates: Mapping[tuple[str, str], JSON] | None = None,
    default_spread: Sequence[JSON] = (),
) -> Snapshot:
    """A snapshot of these objects; unreadable pending pods are left out (`unreadable`).
    SchedulingConfigs constrain the replacements and NodeOverlays price them as they do in
    provisioning."""
    views = views if views is not None else PodViews()
    built = build_input(
        ClusterObjects(
            pending=pending,
            nodes=nodes,
            daemonsets=daemonsets,
            namespaces=dict(namespaces or {}),
            claims=claims,
            volumes=volumes,
            storage_classes=storage_classes,
            templates=templates,
            configs=configs,
            nodeclasses=dict(nodeclasses or {}),
            overlays=overlays,
            buffers=buffers,
            pod_templates=dict(pod_templates or {}),
        ),
        views=views,
        preference_policy=preference_policy,
        default_spread=default_spread,
    )
    inp = built.input
    inp.exact_seconds = 0.0  # a consolidation search runs many simulations; packing suffices
    free: dict[str, ResourceMap] = {}
    repelling = False
    for e in inp.existing_nodes:
        used: ResourceMap = {}
        for p in e.pods:
            repelling = repelling or bool(p.anti_affinity or p.preferred_anti_affinity)
            for k, v in p.requests.items():
                used[k] = used.get(k, 0) + v
        if e.initialized:
            free[e.name] = {k: max(0, v - used.get(k, 0)) for k, v in e.allocatable.items()}
    return Snapshot(
        nodes=tuple(nodes),
        nodepools=dict(nodepools),
        # existing nodes are priced as the replacements are: at the overlays' prices
        templates={t.name: t for t in (built.overlays.templates if built.overlays else templates)},
        pdbs=PdbLimits(pdbs),
        now=now,
        base=inp,
        existing={e.name: e for e in inp.existing_nodes},
        views=views,
        in_flight=in_flight,
        spot_to_spot=spot_to_spot,
        min_savings=min_savings,
        unreadable=built.errors,
        volumes=VolumeTopology(claims=claims, volumes=volumes, classes=storage_classes),
        free=free,
        roomiest=tuple(sorted(free, key=lambda n: (-free[n].get(CPU, 0), n))),
        repelling=repelling,
        virtual=built.virtual,
    )
