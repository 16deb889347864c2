"""The consolidation searches: several nodes into at most one (multi-node), then one node at a
time (single-node), over every candidate, within a time budget.

Both start from the candidates in Karpenter's order (highest price per unit of disruption
first) and only take nodes their NodePool's `Underutilized` budget still allows.

* **Multi-node**, as Karpenter, binary-searches the longest prefix (at least two nodes) that
  consolidates into at most one replacement; but not of one ordering only and not of the first
  100 candidates only: it also searches the candidates by utilisation (least used first), then
  grows the best set greedily with other candidates, least used first, each kept if the set
  still consolidates and saves more; growth runs at most `MAX_GROWTH_PROBES` simulations (on
  a scaled-down cluster the ones it adds are the small, little-used nodes near the front of
  that order; trying every candidate cost four times the CPU for a few percent more saving).
* **Single-node** tries every candidate, NodePools interleaved round-robin as Karpenter; the
  first candidate that consolidates wins (the loop runs again at once after acting). Each
  candidate is first checked against two cheap necessary conditions (its pods' requests fit in
  the other nodes' free room, or some offering that holds them is cheaper than the node), so
  most hopeless candidates cost no simulation. Why each candidate it evaluated cannot be
  consolidated is kept (`SearchStats.unconsolidatable`, in Karpenter's words) for the
  `Unconsolidatable` events.
* **Balanced** NodePools approve a move only if its share of the NodePools' cost saved is at
  least half its share of their disruption cost (`score >= 1/k`, k = 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from karpy.apis.v1 import conditions as cond
from karpy.controllers.disruption.blocker import NO_CHEAPER_REPLACEMENT
from karpy.controllers.disruption.budgets import budget_states
from karpy.controllers.disruption.consolidation.candidates import (
    POLICY_BALANCED,
    ConsolidationCandidate,
    eviction_cost,
)
from karpy.controllers.disruption.consolidation.simulation import Decision, Infeasible, simulate
from karpy.controllers.disruption.consolidation.snapshot import Snapshot, node_price
from karpy.scheduling.resources import ResourceMap

__all__ = [
    "BALANCED_K",
    "MAX_GROWTH_PROBES",
    "MULTI_NODE_TIMEOUT",
    "SINGLE_NODE_TIMEOUT",
    "SearchStats",
    "approved",
    "budget_remaining",
    "multi_node",
    "single_node",
]

BALANCED_K: Final = 2.0
MULTI_NODE_TIMEOUT: Final = 60.0
MAX_GROWTH_PROBES: Final = 32
"""Simulations the greedy growth of a multi-node command may run (candidates the cheap checks
rule out are free). Each costs a whole simulation of a large set; untried candidates are
offered again in the next round, which starts at once after a command."""
SINGLE_NODE_TIMEOUT: Final = 180.0
NOT_CHEAPER: Final = "Can't replace with a cheaper node"


@dataclass
class SearchStats:
    """What a search did: simulations run, candidates skipped by the cheap checks, time."""

    simulations: int = 0
    pruned: int = 0
    considered: int = 0
    seconds: float = 0.0
    timed_out: bool = False
    unconsolidatable: dict[str, str] = field(default_factory=dict)
    """Single-node search: candidate key -> why it cannot be consolidated on its own."""
    blockers: dict[str, str] = field(default_factory=dict)
    """Single-node search: candidate key -> the taxonomy word of `unconsolidatable`'s reason,
    when it has one (`no-cheaper-replacement`, `spot-to-spot`)."""


def budget_remaining(
    snapshot: Snapshot, reason: str = cond.DISRUPTION_REASON_UNDERUTILIZED
) -> dict[str, int]:
    """How many more nodes each NodePool's budget for `reason` lets disruption take now."""
    states = budget_states(snapshot.nodes, snapshot.nodepools, reason=reason, now=snapshot.now)
    return {name: s.remaining for name, s in states.items()}


def within_budget(
    candidates: Iterable[ConsolidationCandidate], remaining: Mapping[str, int]
) -> list[ConsolidationCandidate]:
    """The candidates, in order, while their NodePool's budget lasts."""
    left = dict(remaining)
    out: list[ConsolidationCandidate] = []
    for c in candidates:
        if left.get(c.nodepool, 0) > 0:
            left[c.nodepool] -= 1
            out.append(c)
    return out


# -- Balanced ---------------------------------------------------------------------------------


def _pool_totals(snapshot: Snapshot, pool: str) -> tuple[float, float]:
    """A NodePool's hourly cost and total disruption cost, over its priced nodes."""
    cost = disruption = 0.0
    template = snapshot.templates.get(pool)
    for node in snapshot.nodes:
        if node.nodepool != pool or node.marked_for_deletion:
            continue
        price = node_price(node, template)
        if price is None:
            continue
        cost += price
        disruption += 1.0 + sum(max(0.0, eviction_cost(p)) for p in node.reschedulable_pods())
    return cost, disruption


def approved(snapshot: Snapshot, decision: Decision) -> bool:
    """A move out of Balanced NodePools saves enough for the disruption it causes."""
    pools = sorted({c.nodepool for c in decision.candidates if c.policy == POLICY_BALANCED})
    if not pools:
        return True
    cost = disruption = 0.0
    for pool in pools:
        c, d = _pool_totals(snapshot, pool)
        cost += c
        disruption += d
    if cost <= 0 or disruption <= 0:
        return True
    savings_share = decision.savings / cost
    disruption_share = decision.disruption_cost / disruption
    return savings_share * BALANCED_K >= disruption_share


# -- cheap necessary conditions ---------------------------------------------------------------


def _fits(need: ResourceMap, room: ResourceMap) -> bool:
    return all(amount <= room.get(name, 0) for name, amount in need.items() if amount > 0)


class _Prefilter:
    """Necessary conditions for consolidating a set of nodes, from resources alone."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.free: dict[str, ResourceMap] = {}
        total: ResourceMap = {}
        for e in snapshot.base.existing_nodes:
            if not e.initialized:
                continue
            used: ResourceMap = {}
            for p in e.pods:
                for k, v in p.requests.items():
                    used[k] = used.get(k, 0) + v
            room = {k: max(0, v - used.get(k, 0)) for k, v in e.allocatable.items()}
            self.free[e.name] = room
            for k, v in room.items():
                total[k] = total.get(k, 0) + v
        self.total_free = total
        # every launchable type: (cheapest price, allocatable), cheapest first
        types: dict[str, tuple[float, ResourceMap]] = {}
        for t in snapshot.templates.values():
            for it in t.instance_types:
                price = it.price()
                if price != float("inf") and price < types.get(it.name, (float("inf"), {}))[0]:
                    types[it.name] = (price, it.allocatable)
        self.types = sorted(types.values(), key=lambda pa: pa[0])

    def requests(self, candidates: Sequence[ConsolidationCandidate]) -> ResourceMap:
        need: ResourceMap = {}
        for c in candidates:
            for view in self.snapshot.moving_views(c.pods):
                for k, v in view.requests.items():
                    need[k] = need.get(k, 0) + v
        return need

    def hopeless(self, candidates: Sequence[ConsolidationCandidate]) -> bool:
        """Neither a delete (the pods' requests exceed the other nodes' free room) nor a
        replace (no offering that holds them is cheaper than the nodes) can work."""
        need = self.requests(candidates)
        room = dict(self.total_free)
        for c in candidates:
            for k, v in self.free.get(c.name, {}).items():
                room[k] = room.get(k, 0) - v
        if _fits(need, room):
            return False
        ceiling = sum(c.price for c in candidates) * (1.0 - self.snapshot.min_savings)
        for price, alloc in self.types:
            if price >= ceiling:
                break
            if _fits(need, alloc):
                return False
        return True


# -- the searches -----------------------------------------------------------------------------


def _outcome(
    snapshot: Snapshot, candidates: Sequence[ConsolidationCandidate]
) -> Decision | Infeasible | None:
    """The simulation's command, why there is none, or None when Balanced rejects it."""
    outcome = simulate(snapshot, candidates)
    if isinstance(outcome, Infeasible) and outcome.keep is not None:
        # the cheapest replacement is one of the nodes: keep it and move the others onto it
        rest = [c for c in candidates if c.name != outcome.keep]
        outcome = simulate(snapshot, rest) if rest else outcome
    if isinstance(outcome, Decision) and not approved(snapshot, outcome):
        return None
    return outcome


def _valid(snapshot: Snapshot, candidates: Sequence[ConsolidationCandidate]) -> Decision | None:
    outcome = _outcome(snapshot, candidates)
    return outcome if isinstance(outcome, Decision) else None


def _better(a: Decision | None, b: Decision | None) -> Decision | None:
    """The command that saves more (then: removes more nodes)."""
    if a is None:
        return b
    if b is None:
        return a
    ka = (round(a.savings, 9), len(a.candidates))
    kb = (round(b.savings, 9), len(b.candidates))
    return b if kb > ka else a


def _utilisation(c: ConsolidationCandidate) -> float:
    node = c.candidate.node
    alloc = node.allocatable
    used = node.pod_requests
    shares = [used.get(k, 0) / v for k, v in alloc.items() if k in ("cpu", "memory") and v > 0]
    return max(shares) if shares else 0.0


def multi_node(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    *,
    budgets: Mapping[str, int] | None = None,
    timeout: float = MULTI_NODE_TIMEOUT,
    growth_probes: int = MAX_GROWTH_PROBES,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[Decision | None, SearchStats]:
    """The best command that takes two or more nodes (None if there is none). `budgets`:
    NodePool -> nodes it may still lose (default: from the snapshot, reason `Underutilized`)."""
    stats = SearchStats()
    start = clock()
    deadline = start + timeout
    remaining = dict(budgets) if budgets is not None else budget_remaining(snapshot)
    pool = within_budget(candidates, remaining)
    stats.considered = len(pool)
    if len(pool) < 2:
        return None, stats
    pre = _Prefilter(snapshot)

    def probe(subset: Sequence[ConsolidationCandidate]) -> Decision | None:
        if pre.hopeless(subset):
            stats.pruned += 1
            return None
        stats.simulations += 1
        return _valid(snapshot, subset)

    best: Decision | None = None
    orderings = [list(pool), sorted(pool, key=lambda c: (_utilisation(c), -c.price, c.name))]
    for order in orderings:
        lo, hi = 1, len(order) - 1  # prefix lengths 2..n, as indices of the last node
        found: Decision | None = None
        while lo <= hi:
            if clock() > deadline:
                stats.timed_out = True
                break
            mid = (lo + hi) // 2
            decision = probe(order[: mid + 1])
            if decision is not None:
                found = decision
                lo = mid + 1
            else:
                hi = mid - 1
        best = _better(best, found)
        if stats.timed_out:
            break
    if best is not None and not stats.timed_out:
        chosen = list(best.candidates)
        keys = {c.key for c in chosen}
        growth = 0
        for c in orderings[1]:
            if c.key in keys:
                continue
            if clock() > deadline:
                stats.timed_out = True
                break
            if growth >= growth_probes:
                break
            if pre.hopeless([*chosen, c]):
                stats.pruned += 1
                continue
            growth += 1
            decision = probe([*chosen, c])
            if decision is not None and _better(best, decision) is decision:
                best = decision
                chosen.append(c)
                keys.add(c.key)
    stats.seconds = clock() - start
    return best, stats


def round_robin(candidates: Sequence[ConsolidationCandidate]) -> list[ConsolidationCandidate]:
    """The candidates interleaved by NodePool (each pool's in order), as Karpenter."""
    by_pool: dict[str, list[ConsolidationCandidate]] = {}
    for c in candidates:
        by_pool.setdefault(c.nodepool, []).append(c)
    queues = [by_pool[name] for name in sorted(by_pool)]
    out: list[ConsolidationCandidate] = []
    i = 0
    while any(queues):
        for q in queues:
            if i < len(q):
                out.append(q[i])
        i += 1
        queues = [q for q in queues if i < len(q)]
    return out


def single_node(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    *,
    budgets: Mapping[str, int] | None = None,
    timeout: float = SINGLE_NODE_TIMEOUT,
    first: bool = True,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[Decision], SearchStats]:
    """Commands that each take one node: the first found (`first`), or one per candidate that
    consolidates (every candidate evaluated). `budgets` as for `multi_node`."""
    stats = SearchStats()
    start = clock()
    remaining = dict(budgets) if budgets is not None else budget_remaining(snapshot)
    pre = _Prefilter(snapshot)
    out: list[Decision] = []
    for c in round_robin(candidates):
        if remaining.get(c.nodepool, 0) <= 0:
            continue
        if clock() - start > timeout:
            stats.timed_out = True
            break
        stats.considered += 1
        if pre.hopeless([c]):
            stats.pruned += 1
            stats.unconsolidatable[c.key] = NOT_CHEAPER
            stats.blockers[c.key] = NO_CHEAPER_REPLACEMENT
            continue
        stats.simulations += 1
        decision = _outcome(snapshot, [c])
        if isinstance(decision, Infeasible):
            stats.unconsolidatable[c.key] = decision.reason
            if decision.blocker is not None:
                stats.blockers[c.key] = decision.blocker
        if not isinstance(decision, Decision):
            continue
        out.append(decision)
        if first:
            break
    stats.seconds = clock() - start
    return out, stats
