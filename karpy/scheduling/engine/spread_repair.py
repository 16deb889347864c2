"""Undo placements that NodePool limits turned into topology spread violations.

Zones were chosen for every pod before nodes were packed; when a pool's limits then drop some
of those nodes, the domains left can be out of balance. Pods placed in this solve are removed
from the fullest domain until every DoNotSchedule spread holds again, and reported unschedulable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from karpy.scheduling.engine.claims import PackedNode
from karpy.scheduling.engine.domains import Topology
from karpy.scheduling.engine.existing import NodeView
from karpy.scheduling.engine.pools import Dims
from karpy.scheduling.engine.topology import SPREAD, group_key
from karpy.scheduling.pods import DO_NOT_SCHEDULE, PodView, SpreadConstraint

__all__ = ["repair_spread"]

# where a located pod is: a packed node's index, or one of these for existing nodes
_BOUND = -2  # bound before the solve: never moved
_PLACED_ON_EXISTING = -1  # placed on an existing node in this solve: counted, not moved


class _Located(NamedTuple):
    pod: PodView
    where: int
    labels: Mapping[str, str]


class _Spec(NamedTuple):
    """A pod placed in this solve and one of its DoNotSchedule spreads."""

    pod: PodView
    constraint: SpreadConstraint


class _Counted(NamedTuple):
    pod: PodView
    where: int


def repair_spread(
    packed: list[PackedNode],
    *,
    existing: Sequence[NodeView],
    placed_on_existing: Mapping[str, list[PodView]],
    topology: Topology,
    dims: Dims,
    errors: dict[str, str],
) -> list[PackedNode]:
    """The packed nodes without the pods whose removal restores every zonal DoNotSchedule
    spread; their errors say that the spread could not hold once limits were reached."""
    located: list[_Located] = []
    for i, pn in enumerate(packed):
        labels = pn.node.reqs.labels()
        located.extend(_Located(p, i, labels) for p in pn.pods)
    for e in existing:
        located.extend(_Located(p, _BOUND, e.labels) for p in e.node.pods)
        located.extend(
            _Located(p, _PLACED_ON_EXISTING, e.labels) for p in placed_on_existing[e.node.name]
        )
    evicted: set[int] = set()
    for g in topology.groups.values():
        if g.kind != SPREAD or g.is_hostname:
            continue
        specs = [
            _Spec(loc.pod, s)
            for loc in located
            if loc.where >= 0
            for s in loc.pod.spread
            if s.when_unsatisfiable == DO_NOT_SCHEDULE
            and group_key(SPREAD, s, loc.pod.namespace) == g.key
        ]
        if not specs:
            continue
        first = specs[0]
        spec = first.constraint
        skew = min(s.constraint.max_skew for s in specs)
        counts: dict[str, list[_Counted]] = {}
        for loc in located:
            d = loc.labels.get(g.topology_key)
            if d is not None and g.selects(loc.pod, topology.ns_labels):
                counts.setdefault(d, []).append(_Counted(loc.pod, loc.where))
        eligible = topology.eligible_domains(
            g.topology_key, first.pod.strict_requirements(), spec, first.pod.tolerations
        )
        while eligible:
            sizes = {d: len(counts.get(d, [])) for d in eligible}
            low = min(sizes.values()) if len(sizes) >= (spec.min_domains or 0) else 0
            high = max(sizes, key=lambda d: (sizes[d], d))
            if sizes[high] - low <= skew:
                break
            movable = [c for c in counts[high] if c.where >= 0 and id(c.pod) not in evicted]
            if not movable:
                break
            last = movable[-1]
            counts[high].remove(last)
            evicted.add(id(last.pod))
            errors[last.pod.key] = (
                f"topology spread on {g.topology_key} could not hold once nodepool limits "
                "were reached"
            )
    if not evicted:
        return packed
    for pn in packed:
        for p in pn.pods:
            if id(p) in evicted:
                for r, v in enumerate(dims.vec(p.requests)):
                    pn.node.used[r] -= v
    return [
        PackedNode(
            pn.pool, pn.node, [p for p in pn.pods if id(p) not in evicted], pn.types, pn.relaxed
        )
        for pn in packed
    ]
