"""Disruption budgets per NodePool: how many more nodes a disruption reason may take now.

For each NodePool, `nodes` counts its managed, initialized nodes whose instance is not already
terminating; `disrupting` counts those of them that are not Ready or are being deleted. The
NodePool's budgets for the reason give `allowed` (percentages of `nodes`, rounded up; inactive
budgets allow everything; a cron schedule that does not parse allows nothing), and what a
method may still start is `allowed - disrupting`, never negative.

`next_change` says when a cron window next changes what a reason allows (the figure
`status.disruption.budgets` and `karpy explain nodepool` show beside it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from karpy.apis.objects import is_condition_true, is_node_ready
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.state import StateNode

__all__ = ["BudgetChange", "BudgetState", "budget_states", "next_change", "shown"]


@dataclass(frozen=True, slots=True)
class BudgetState:
    """One NodePool's budget for one reason at one moment."""

    nodes: int
    disrupting: int
    allowed: int

    @property
    def remaining(self) -> int:
        """How many more nodes may start disrupting now."""
        return max(self.allowed - self.disrupting, 0)


def _counts(node: StateNode) -> bool:
    if not node.managed or not node.initialized:
        return False
    return not is_condition_true(node.nodeclaim, cond.NODECLAIM_INSTANCE_TERMINATING)


def budget_states(
    nodes: Iterable[StateNode],
    nodepools: Mapping[str, NodePool],
    *,
    reason: str,
    now: datetime,
) -> dict[str, BudgetState]:
    """Every NodePool's budget for `reason` at `now` (NodePools without nodes included)."""
    totals: dict[str, int] = dict.fromkeys(nodepools, 0)
    disrupting: dict[str, int] = dict.fromkeys(nodepools, 0)
    for node in nodes:
        pool = node.nodepool
        if pool is None or pool not in nodepools or not _counts(node):
            continue
        totals[pool] += 1
        if node.marked_for_deletion or not is_node_ready(node.node):
            disrupting[pool] += 1
    return {
        name: BudgetState(
            nodes=totals[name],
            disrupting=disrupting[name],
            allowed=pool.allowed_disruptions(now=now, num_nodes=totals[name], reason=reason),
        )
        for name, pool in nodepools.items()
    }


@dataclass(frozen=True, slots=True)
class BudgetChange:
    """When a cron window next changes what a NodePool allows for a reason, and to what."""

    at: datetime
    allowed: int


def next_change(
    pool: NodePool, *, reason: str, now: datetime, num_nodes: int
) -> BudgetChange | None:
    """The first moment after `now` at which a scheduled budget for `reason` opens or closes
    and the allowed disruptions (for `num_nodes` nodes) differ from now's; None when no window
    changes them (no scheduled budget, windows that stay open, or a tighter budget that
    hides them). A schedule that does not parse never changes (it allows nothing)."""
    current = pool.allowed_disruptions(now=now, num_nodes=num_nodes, reason=reason)
    moments: set[datetime] = set()
    for budget in pool.budgets_for(reason):
        try:
            window = budget.window(now)
        except (ValueError, KeyError):
            continue
        if window is None:
            continue
        opens, closes = window
        moments.update(t for t in (opens, closes) if t is not None and t > now)
    for at in sorted(moments):
        # a window holds [opens, closes): at either edge the new state already holds
        allowed = pool.allowed_disruptions(now=at, num_nodes=num_nodes, reason=reason)
        if allowed != current:
            return BudgetChange(at=at, allowed=allowed)
    return None


def shown(allowed: int, nodes: int) -> int:
    """Allowed disruptions as status and `explain` show them: an inactive or unbounded budget
    allows every node, so never more than the NodePool's nodes."""
    return min(allowed, nodes)
