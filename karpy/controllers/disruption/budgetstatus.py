"""`nodepool.budgets`: `status.disruption.budgets` of each NodePool (karpy only; upstream asks
for it in kubernetes-sigs/karpenter#2017).

For each disruption reason: how many of the NodePool's nodes its budgets allow to be
disrupting now, how many are, and when a cron window next changes the allowance (and to what).
The figures are `disruption.budgets`, the functions the disruption loop decides with, on the
same cluster state, so status and the loop never disagree. Refreshed every 10 s and at the next
window change, written only when they changed; nothing is written before cluster state has
synced (a count of 0 nodes would show a false allowance). Under Karpenter's own NodePool CRD
(migrations keep it installed for a while) the apiserver prunes the field: the controller then
writes it only every 10 minutes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Final

from karpy.apis.descriptors import NODEPOOLS
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.controllers.common.status import patch_status
from karpy.controllers.disruption.budgets import budget_states, next_change, shown
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.state import StateNode

__all__ = ["NAME", "NodePoolBudgetsController", "budget_status"]

NAME: Final = "nodepool.budgets"
PERIOD: Final = 10.0
UNSYNCED_RETRY: Final = 1.0
PRUNED_RETRY: Final = 600.0
REASONS: Final = (
    cond.DISRUPTION_REASON_EMPTY,
    cond.DISRUPTION_REASON_DRIFTED,
    cond.DISRUPTION_REASON_UNDERUTILIZED,
)

JSON = dict[str, Any]


def _time(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def budget_status(pool: NodePool, nodes: Iterable[StateNode], *, now: datetime) -> list[JSON]:
    """`status.disruption.budgets` of `pool` at `now` (one entry per reason)."""
    mine = [n for n in nodes if n.nodepool == pool.name]
    out: list[JSON] = []
    for reason in REASONS:
        state = budget_states(mine, {pool.name: pool}, reason=reason, now=now)[pool.name]
        entry: JSON = {
            "reason": reason,
            "allowed": shown(state.allowed, state.nodes),
            "disrupting": state.disrupting,
        }
        change = next_change(pool, reason=reason, now=now, num_nodes=state.nodes)
        if change is not None:
            entry["nextChangeAt"] = _time(change.at)
            entry["allowedAfterChange"] = shown(change.allowed, state.nodes)
        out.append(entry)
    return out


class NodePoolBudgetsController:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodepools: Informer,
        nodes: Callable[[], Iterable[StateNode]],
        synced: Callable[[], bool],
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodepools = nodepools
        self.nodes = nodes
        self.synced = synced
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools).workers(4).log_kind("NodePool")

    async def reconcile(self, name: str) -> Result | None:
        raw = self.nodepools.get(name)
        if raw is None:
            return None
        if not self.synced():
            return Result(requeue_after=UNSYNCED_RETRY)
        try:
            pool = NodePool.model_validate(raw)
        except ValueError:
            return None  # the validation controller reports it; a spec change requeues
        now = self.clock.wall()
        budgets = budget_status(pool, self.nodes(), now=now)
        status = raw.get("status") or {}
        if (status.get("disruption") or {}).get("budgets") != budgets:
            patched = await patch_status(
                self.client,
                resource=NODEPOOLS,
                obj=raw,
                status={"disruption": {"budgets": budgets}},
                optimistic_lock=False,
            )
            if patched is None:
                return None
            if not (patched.get("status") or {}).get("disruption"):
                # Karpenter's own CRD is installed: it prunes the field; do not rewrite it
                # every pass (a CRD upgrade re-enqueues nothing, so look again now and then)
                return Result(requeue_after=PRUNED_RETRY)
        wait = PERIOD
        for entry in budgets:
            if "nextChangeAt" in entry:
                at = datetime.strptime(entry["nextChangeAt"], "%Y-%m-%dT%H:%M:%S%z")
                wait = min(wait, max((at - now).total_seconds(), 0.0) + 0.5)
        return Result(requeue_after=wait)
