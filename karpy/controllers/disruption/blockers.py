"""For one node and each disruption method: a candidate, or the first blocker in the taxonomy.

The disruption loop and `karpy explain node` both ask here, so they cannot disagree: the
common rules are `candidates.candidate` (the same call the methods' candidates come from, which
raises with the blocker), then what each method adds in Karpenter's order (a static NodePool,
`consolidateAfter` not elapsed), then the NodePool's budget for the method's reason. What only a
simulation can tell (no cheaper replacement, the spot-to-spot rules) comes from the single-node
search's `SearchStats.blockers`, passed in as `searched`.

A method a node is simply not for (emptiness for a node with pods, drift for a node that has not
drifted) is no blocker: the verdict says `applies=False` and names no reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, cast

from karpy.apis.objects import is_condition_true
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.controllers.disruption.blocker import (
    BUDGET,
    CONSOLIDATE_AFTER,
    STATIC_NODEPOOL,
    Blocker,
    BlockerReason,
)
from karpy.controllers.disruption.budgets import BudgetState
from karpy.controllers.disruption.candidates import (
    Candidate,
    NotCandidate,
    PdbLimits,
    candidate,
    quoted,
)
from karpy.controllers.nodeclaim.disruption.consolidatable import consolidatable_at
from karpy.state import StateNode

__all__ = [
    "CONSOLIDATION",
    "DRIFT",
    "EMPTINESS",
    "METHODS",
    "Verdict",
    "budget_blocker",
    "node_verdicts",
]

EMPTINESS: Final = "emptiness"
DRIFT: Final = "drift"
CONSOLIDATION: Final = "consolidation"
METHODS: Final = (EMPTINESS, DRIFT, CONSOLIDATION)
"""The methods as the metric's `method` label and `explain` name them."""
REASON_OF: Final = {
    EMPTINESS: cond.DISRUPTION_REASON_EMPTY,
    DRIFT: cond.DISRUPTION_REASON_DRIFTED,
    CONSOLIDATION: cond.DISRUPTION_REASON_UNDERUTILIZED,
}
"""Each method's budget reason."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One method's answer for one node."""

    method: str
    candidate: bool
    """The method may act on the node now (it still has to find a command)."""
    applies: bool = True
    """False: the method is not for this node (no pods to empty, not drifted)."""
    blocker: Blocker | None = None
    note: str = ""
    """Why not, when it is neither a candidate nor blocked in the taxonomy's terms."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"method": self.method, "candidate": self.candidate}
        if not self.applies:
            out["applies"] = False
        if self.blocker is not None:
            out["blocker"] = self.blocker.to_dict()
        if self.note:
            out["note"] = self.note
        return out


def budget_blocker(pool: NodePool, state: BudgetState, *, reason: str, now: datetime) -> Blocker:
    """The `budget` blocker of a NodePool whose budget for `reason` is spent: which budget
    allows the least now (its nodes, schedule and duration) and how many are disrupting."""
    tightest = ""
    least: int | None = None
    for budget in pool.budgets_for(reason):
        allowed = budget.allowed_disruptions(now, state.nodes)
        if least is None or allowed < least:
            least = allowed
            window = f", schedule {quoted(budget.schedule or '')} for {budget.duration}"
            tightest = f"nodes {quoted(budget.nodes)}" + (window if budget.schedule else "")
    detail = (
        f"NodePool {quoted(pool.name)} allows {state.allowed} disruption(s) for reason "
        f"{reason} ({tightest or 'default budget'}), {state.disrupting} disrupting"
    )
    return Blocker(BUDGET, "NodePool", pool.name, detail)


def _consolidate_after(c: Candidate, now: datetime) -> Blocker | None:
    if is_condition_true(c.node.nodeclaim, cond.NODECLAIM_CONSOLIDATABLE):
        return None
    after = c.nodepool.spec.disruption.consolidate_after_duration()
    if after is None:
        return None  # consolidation disabled: a NodePool setting, not something that elapses
    at = consolidatable_at(c.node.nodeclaim or {}, after)
    left = f"{max((at - now).total_seconds(), 0.0):.0f}s left" if at is not None else "not yet"
    detail = f"consolidateAfter {c.nodepool.spec.disruption.consolidate_after} not elapsed ({left})"
    return Blocker(CONSOLIDATE_AFTER, "NodePool", c.nodepool_name, detail)


def _method(
    method: str,
    c: Candidate,
    *,
    now: datetime,
    budgets: Mapping[str, Mapping[str, BudgetState]],
    searched: Mapping[str, str],
) -> Verdict:
    if c.nodepool.is_static:
        detail = f"NodePool {quoted(c.nodepool_name)} is static (spec.replicas)"
        blocker = Blocker(STATIC_NODEPOOL, "NodePool", c.nodepool_name, detail)
        return Verdict(method, candidate=False, blocker=blocker)
    disruption = c.nodepool.spec.disruption
    if method == DRIFT:
        if not is_condition_true(c.node.nodeclaim, cond.NODECLAIM_DRIFTED):
            return Verdict(method, candidate=False, applies=False, note="not drifted")
    else:
        if disruption.consolidate_after_duration() is None:
            note = f"NodePool {quoted(c.nodepool_name)} has consolidation disabled"
            return Verdict(method, candidate=False, applies=False, note=note)
        empty = c.is_empty()
        if method == EMPTINESS and not empty:
            return Verdict(method, candidate=False, applies=False, note="node has pods")
        if method == CONSOLIDATION:
            if empty:
                return Verdict(method, candidate=False, applies=False, note="empty (emptiness)")
            if disruption.consolidation_policy == "WhenEmpty":
                note = f"NodePool {quoted(c.nodepool_name)} consolidates only empty nodes"
                return Verdict(method, candidate=False, applies=False, note=note)
        waiting = _consolidate_after(c, now)
        if waiting is not None:
            return Verdict(method, candidate=False, blocker=waiting)
    state = budgets.get(REASON_OF[method], {}).get(c.nodepool_name)
    if state is not None and state.remaining <= 0:
        blocker = budget_blocker(c.nodepool, state, reason=REASON_OF[method], now=now)
        return Verdict(method, candidate=False, blocker=blocker)
    word = searched.get(c.key) if method == CONSOLIDATION else None
    if word is not None:
        detail = f"single-node consolidation: {word.replace('-', ' ')}"
        blocker = Blocker(cast(BlockerReason, word), "Node", c.name, detail)
        return Verdict(method, candidate=False, blocker=blocker)
    return Verdict(method, candidate=True)


def node_verdicts(
    node: StateNode,
    *,
    nodepools: Mapping[str, NodePool],
    pdbs: PdbLimits,
    now: datetime,
    budgets: Mapping[str, Mapping[str, BudgetState]],
    in_flight: Sequence[str] | frozenset[str] = (),
    searched: Mapping[str, str] | None = None,
) -> list[Verdict]:
    """Each method's verdict on `node` (`METHODS` order). `budgets`: budget reason -> NodePool
    -> its state (`budget_states`); `searched`: node key -> the single-node search's blocker
    word. Drift is eventual: a NodeClaim with `terminationGracePeriod` passes PDBs and
    do-not-disrupt pods, so its common rules are asked separately."""
    out: list[Verdict] = []
    for method in METHODS:
        try:
            c = candidate(
                node,
                nodepools=nodepools,
                pdbs=pdbs,
                now=now,
                in_flight=in_flight,
                graceful=method != DRIFT,
            )
        except NotCandidate as why:
            note = "" if why.blocker is not None else str(why)
            out.append(Verdict(method, candidate=False, blocker=why.blocker, note=note))
            continue
        out.append(_method(method, c, now=now, budgets=budgets, searched=searched or {}))
    return out
