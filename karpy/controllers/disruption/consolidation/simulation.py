"""One consolidation simulation: can these nodes go, and what (if anything) replaces them?

The candidates' nodes leave the snapshot and their pods join the pending pods; the scheduling
engine places them on the remaining nodes and, if it must, on new NodeClaims. As Karpenter's
`computeConsolidation`:

* a candidate pod that cannot be placed, or lands on a node that has not initialized, makes it
  a no-op; pods that were pending already do not count (the provisioner owns them, and NodeClaims
  holding only them are ignored); a CapacityBuffer's virtual pods count as candidate pods do
  (they must fit, a NodeClaim for them is a replacement), so the buffers' room is kept;
* no NodeClaim for the candidates' pods: **delete**; more than one: no-op;
* exactly one: **replace**, if cheaper. The replacement's instance types are those whose worst
  launch price (the dearest compatible offering of the capacity type that would launch:
  reserved, then spot, then on-demand) is below the candidates' total price times
  `1 - min_savings`; a type some candidate already runs must be cheaper than that candidate
  (so a node is never swapped for its own type in its own zone and capacity type). A
  replacement that may be spot or on-demand is launched as spot only, so a spot shortage
  fails the launch instead of buying dearer on-demand. Replacing spot with spot needs the
  `SpotToSpotConsolidation` gate and, for a single node, at least 15 cheaper types, of which
  the 15 cheapest are kept, or as many as minValues needs (Karpenter's guard against
  replacement ping-pong). The cheaper types must still meet the NodePool's minValues (the
  blocker `min-values`), unless the replacement was planned with them relaxed (BestEffort).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from karpy.apis.v1.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE
from karpy.controllers.disruption.blocker import MIN_VALUES, NO_CHEAPER_REPLACEMENT, SPOT_TO_SPOT
from karpy.controllers.disruption.consolidation.candidates import ConsolidationCandidate
from karpy.controllers.disruption.consolidation.snapshot import Snapshot
from karpy.scheduling.engine import NewNodeClaim, SchedulingResult, schedule
from karpy.scheduling.engine.limits import min_values_shortfall, relax_min_values
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import ResourceMap
from karpy.state import pods as podutil
from karpy.state.inputs import NODES_RESOURCE

__all__ = [
    "MIN_SPOT_TO_SPOT_TYPES",
    "Decision",
    "Infeasible",
    "buffer_misses",
    "launch_price",
    "simulate",
]

MIN_SPOT_TO_SPOT_TYPES: Final = 15
SPOT: Final = "spot"
ON_DEMAND: Final = "on-demand"
RESERVED: Final = "reserved"
_PRECEDENCE: Final = (RESERVED, SPOT, ON_DEMAND)
NARROW_NODES: Final = 12
REPLACEMENT: Final = "<replacement>"
"""Where a pod goes when it goes to the replacement NodeClaim."""


@dataclass(frozen=True)
class Decision:
    """A consolidation command: delete the candidates, or replace them with one NodeClaim."""

    kind: Literal["delete", "replace"]
    candidates: tuple[ConsolidationCandidate, ...]
    replacement: NewNodeClaim | None = None
    """The NodeClaim to launch, narrowed to the types and capacity type that save money."""
    replacement_price: float = 0.0
    """The replacement's cheapest launch price (what the saving assumes)."""
    moves: dict[str, str] = field(default_factory=dict)
    """Pod key -> the node it goes to (`REPLACEMENT` for the new NodeClaim)."""

    @property
    def price(self) -> float:
        return sum(c.price for c in self.candidates)

    @property
    def savings(self) -> float:
        return self.price - self.replacement_price

    @property
    def disruption_cost(self) -> float:
        return sum(c.disruption_cost for c in self.candidates)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.candidates]


@dataclass(frozen=True)
class Infeasible:
    """Why the candidates cannot be consolidated (in Karpenter's words where it has them)."""

    reason: str
    keep: str | None = None
    blocker: str | None = None
    """The taxonomy word (`blocker.REASONS`) when the reason is one of them."""
    """A candidate whose node is what the replacement would be (same type, zone and capacity
    type): the others may go with their pods moving onto it instead."""


def launch_price(it: InstanceType, reqs: Requirements) -> float | None:
    """The dearest compatible, available offering of the capacity type a launch would pick
    (reserved, then spot, then on-demand), or None if nothing is compatible."""
    by_type: dict[str, float] = {}
    for o in it.offerings:
        if o.available and o.compatible(reqs):
            by_type[o.capacity_type] = max(by_type.get(o.capacity_type, 0.0), o.price)
    for ct in _PRECEDENCE:
        if ct in by_type:
            return by_type[ct]
    return max(by_type.values()) if by_type else None


def _usage_without(
    usage: dict[str, ResourceMap], candidates: Sequence[ConsolidationCandidate]
) -> dict[str, ResourceMap]:
    out = {k: dict(v) for k, v in usage.items()}
    for c in candidates:
        acc = out.get(c.nodepool)
        if acc is None:
            continue
        for name, amount in c.candidate.node.capacity.items():
            acc[name] = acc.get(name, 0) - amount
        acc[NODES_RESOURCE] = acc.get(NODES_RESOURCE, 0) - 1
    return out


def _constrained(view: PodView) -> bool:
    return bool(
        view.spread
        or view.affinity
        or view.anti_affinity
        or view.preferred_affinity
        or view.preferred_anti_affinity
    )


def roomiest(
    snapshot: Snapshot, gone: set[str], need: ResourceMap, *, at_least: int = NARROW_NODES
) -> set[str]:
    """The initialized nodes with the most free CPU, enough of them to hold `need` twice over
    (and at least `at_least`)."""
    out: set[str] = set()
    room: dict[str, int] = {}
    for name in snapshot.roomiest:
        if name in gone:
            continue
        out.add(name)
        for k, v in snapshot.free[name].items():
            room[k] = room.get(k, 0) + v
        if len(out) >= at_least and all(room.get(k, 0) >= 2 * v for k, v in need.items()):
            break
    return out


def run_schedule(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    *,
    only: set[str] | None = None,
) -> tuple[SchedulingResult, list[PodView]]:
    """The engine's plan with the candidates gone and their pods to place; with `only`, on
    those nodes and no new capacity."""
    gone = {c.name for c in candidates}
    moving: list[PodView] = []
    for c in candidates:
        moving.extend(snapshot.moving_views(c.pods))
    base = snapshot.base
    inp = dataclasses.replace(
        base,
        pods=[*base.pods, *moving],
        existing_nodes=(
            [e for e in base.existing_nodes if e.name not in gone]
            if only is None
            else [snapshot.existing[n] for n in sorted(only) if n not in gone]
        ),
        pool_usage=_usage_without(dict(base.pool_usage or {}), candidates),
    )
    if only is not None:
        inp.templates = []
    return schedule(inp), moving


def buffer_misses(snapshot: Snapshot, gone: set[str]) -> int:
    """How many of the CapacityBuffers' virtual pods find no room on the nodes left without
    `gone`, with no new capacity: empty nodes may go only while this does not grow."""
    if not snapshot.virtual:
        return 0
    inp = dataclasses.replace(
        snapshot.base,
        pods=[p for p in snapshot.base.pods if p.key in snapshot.virtual],
        existing_nodes=[e for e in snapshot.base.existing_nodes if e.name not in gone],
        templates=[],
    )
    return sum(1 for key in schedule(inp).errors if key in snapshot.virtual)


def simulate(
    snapshot: Snapshot, candidates: Sequence[ConsolidationCandidate], *, narrow: bool = True
) -> Decision | Infeasible:
    """What consolidating `candidates` together would do.

    With `narrow`, when neither the moving pods nor any pod in the cluster has inter-pod
    constraints (spread, affinity, anti-affinity) and nothing is pending, the pods are first
    placed on only the roomiest nodes (a placement there is a placement in the cluster); only
    if that needs new capacity is the whole cluster simulated. This makes a simulation cost
    tens of nodes instead of every node of a large cluster.
    """
    if narrow and not snapshot.repelling and not snapshot.base.pods:
        views = [v for c in candidates for v in snapshot.moving_views(c.pods)]
        if not any(_constrained(v) for v in views):
            need: ResourceMap = {}
            for v in views:
                for k, amount in v.requests.items():
                    need[k] = need.get(k, 0) + amount
            only = roomiest(snapshot, {c.name for c in candidates}, need)
            outcome = _decide(snapshot, candidates, *run_schedule(snapshot, candidates, only=only))
            if isinstance(outcome, Decision) and outcome.kind == "delete":
                return outcome
    return _decide(snapshot, candidates, *run_schedule(snapshot, candidates))


def _decide(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    result: SchedulingResult,
    moving: Sequence[PodView],
) -> Decision | Infeasible:
    keys = {p.key for p in moving}
    unreadable = [
        podutil.pod_key(p) for c in candidates for p in c.pods if podutil.pod_key(p) not in keys
    ]
    if unreadable:
        return Infeasible(f"pod {unreadable[0]} cannot be simulated")
    for key in sorted(keys):
        if key in result.errors:
            return Infeasible(f"not all pods would schedule, {key} => {result.errors[key]}")
    # the CapacityBuffers' virtual pods must keep their room: they count as pods to place
    virtual = snapshot.virtual
    for key in sorted(virtual):
        if key in result.errors:
            return Infeasible(f"capacity buffer pod {key} would not schedule: {result.errors[key]}")
    moves: dict[str, str] = {}
    for name, placed in result.existing.items():
        for p in placed:
            if p.key not in keys:
                continue
            existing = snapshot.existing.get(name)
            if existing is not None and not existing.initialized:
                return Infeasible(f"pod {p.key} would schedule to uninitialized node {name}")
            moves[p.key] = name
    claims = [
        c for c in result.node_claims if any(p.key in keys or p.key in virtual for p in c.pods)
    ]
    if not claims:
        return Decision(kind="delete", candidates=tuple(candidates), moves=moves)
    if len(claims) > 1:
        merged = merge_claims(snapshot, claims)
        if merged is None:
            return Infeasible(f"Can't remove without creating {len(claims)} candidates")
        claims = [merged]
    claim = claims[0]
    for p in claim.pods:
        if p.key in keys:
            moves[p.key] = REPLACEMENT
    return _replace(snapshot, candidates, claim, moves)


def merge_claims(snapshot: Snapshot, claims: Sequence[NewNodeClaim]) -> NewNodeClaim | None:
    """One NodeClaim for the pods of several, when nothing ties a pod to its own claim.

    The engine packs for cost, so pods it could put on one node may come back on two nodes of
    the same total price; consolidation wants at most one. The claims must come from one
    NodePool with compatible requirements, their pods must have no inter-pod constraints and
    no volume topology; the merged claim asks for every pod's requests plus the largest
    DaemonSet overhead of the claims, on the types of the NodePool that hold that."""
    pools = {c.nodepool for c in claims}
    template = snapshot.templates.get(claims[0].nodepool)
    if len(pools) != 1 or template is None:
        return None
    pods = [p for c in claims for p in c.pods]
    if any(_constrained(p) or p.volume_terms for p in pods):
        return None
    reqs = claims[0].requirements.without(LABEL_INSTANCE_TYPE)
    for c in claims[1:]:
        other = c.requirements.without(LABEL_INSTANCE_TYPE)
        if reqs.intersects(other) is not None:
            return None
        reqs = reqs.union(other)
    requests: dict[str, int] = {}
    overhead: dict[str, int] = {}
    for c in claims:
        used: dict[str, int] = {}
        for p in c.pods:
            for k, v in p.requests.items():
                used[k] = used.get(k, 0) + v
        for k, v in used.items():
            requests[k] = requests.get(k, 0) + v
        for k, v in c.requests.items():
            overhead[k] = max(overhead.get(k, 0), v - used.get(k, 0))
    for k, v in overhead.items():
        requests[k] = requests.get(k, 0) + v
    fitting = [
        it
        for it in template.instance_types
        if it.requirements.intersects(reqs) is None
        and all(it.allocatable.get(k, 0) >= v for k, v in requests.items() if v > 0)
        and it.cheapest_offering(reqs) is not None
    ]
    if not fitting:
        return None
    fitting.sort(key=lambda it: (it.price(reqs), it.name))
    reqs = reqs.add(
        Requirement(LABEL_INSTANCE_TYPE, complement=False, values=tuple(t.name for t in fitting))
    )
    labels = {
        k: v for k, v in claims[0].labels.items() if all(c.labels.get(k) == v for c in claims)
    }
    labels.pop(LABEL_INSTANCE_TYPE, None)
    return dataclasses.replace(
        claims[0],
        requirements=reqs,
        instance_types=fitting,
        requests=requests,
        pods=pods,
        offering=fitting[0].cheapest_offering(reqs),
        labels=labels,
    )


def _min_values_prefix(reqs: Requirements, types: Sequence[InstanceType]) -> int:
    """How many of `types` (cheapest first) it takes to meet every minValues of `reqs`."""
    if all(r.min_values is None for r in reqs.values()):
        return 0
    for n in range(1, len(types) + 1):
        if min_values_shortfall(reqs, types[:n]) is None:
            return n
    return len(types)


def _replace(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    claim: NewNodeClaim,
    moves: dict[str, str],
) -> Decision | Infeasible:
    if len(candidates) > 1 and claim.offering is not None and claim.instance_types:
        first = claim.instance_types[0].name
        for c in candidates:
            labels = c.candidate.node.labels
            if (
                c.candidate.instance_type == first
                and labels.get(LABEL_TOPOLOGY_ZONE) == claim.offering.zone
                and c.candidate.capacity_type == claim.offering.capacity_type
            ):
                return Infeasible(
                    f"the replacement would be node {c.name} again (same type, zone and "
                    "capacity type)",
                    keep=c.name,
                )
    total = sum(c.price for c in candidates)
    ceiling = total * (1.0 - snapshot.min_savings)
    ct_req = claim.requirements.get(LABEL_CAPACITY_TYPE)
    all_spot = all(c.candidate.capacity_type == SPOT for c in candidates)
    spot_to_spot = all_spot and (ct_req is None or ct_req.has(SPOT))
    if spot_to_spot and not snapshot.spot_to_spot:
        return Infeasible(
            "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node",
            blocker=SPOT_TO_SPOT,
        )
    reqs = claim.requirements
    if ct_req is None or (ct_req.has(SPOT) and ct_req.has(ON_DEMAND)):
        # priced as spot, so launched as spot: never fall back to a dearer on-demand node
        reqs = reqs.without(LABEL_CAPACITY_TYPE).add(
            Requirement(LABEL_CAPACITY_TYPE, complement=False, values=(SPOT,))
        )
    own_price: dict[str, float] = {}
    for c in candidates:
        t = c.candidate.instance_type
        own_price[t] = min(own_price.get(t, c.price), c.price)
    options: list[tuple[float, str, InstanceType]] = []
    for it in claim.instance_types:
        price = launch_price(it, reqs)
        if price is None or price >= ceiling:
            continue
        if it.name in own_price and price >= own_price[it.name]:
            continue
        options.append((price, it.name, it))
    options.sort(key=lambda o: (o[0], o[1]))
    if not options:
        return Infeasible("Can't replace with a cheaper node", blocker=NO_CHEAPER_REPLACEMENT)
    short = min_values_shortfall(reqs, [o[2] for o in options])
    if short is not None and not claim.min_values_relaxed:
        key, found, wanted = short
        return Infeasible(
            f"minValues requirement is not met for {key} ({found} cheaper < {wanted})",
            blocker=MIN_VALUES,
        )
    if spot_to_spot and len(candidates) == 1:
        if len(options) < MIN_SPOT_TO_SPOT_TYPES:
            return Infeasible(
                f"SpotToSpotConsolidation requires {MIN_SPOT_TO_SPOT_TYPES} cheaper instance type "
                f"options than the current candidate to consolidate, got {len(options)}",
                blocker=SPOT_TO_SPOT,
            )
        keep = max(MIN_SPOT_TO_SPOT_TYPES, _min_values_prefix(reqs, [o[2] for o in options]))
        options = options[:keep]
    types = [o[2] for o in options]
    names = tuple(t.name for t in types)
    it_req = reqs.get(LABEL_INSTANCE_TYPE)
    reqs = reqs.without(LABEL_INSTANCE_TYPE).add(
        Requirement(
            LABEL_INSTANCE_TYPE,
            complement=False,
            values=names,
            min_values=it_req.min_values if it_req is not None else None,
        )
    )
    if short is not None:  # BestEffort: the replacement records what it can meet
        reqs = relax_min_values(reqs, types)
    offering = types[0].cheapest_offering(reqs)
    replacement = dataclasses.replace(
        claim, requirements=reqs, instance_types=types, offering=offering
    )
    return Decision(
        kind="replace",
        candidates=tuple(candidates),
        replacement=replacement,
        replacement_price=offering.price if offering is not None else options[0][0],
        moves=moves,
    )
