"""Emptiness: delete empty nodes (only DaemonSet, static, finished or terminating pods left)
that have been `Consolidatable`, in NodePools whose consolidation is not disabled, oldest first,
as many per NodePool as its budget for reason `Empty` allows, in one command.

Validation after the delay keeps the nodes that are still empty, consolidatable candidates within
a freshly computed budget (a pod that arrived meanwhile drops its node)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from karpy.apis.objects import is_condition_true
from karpy.apis.v1 import conditions as cond
from karpy.controllers.disruption.candidates import Candidate, quoted
from karpy.controllers.disruption.events import (
    REASON_UNCONSOLIDATABLE,
    DedupingEvents,
    publish_unconsolidatable,
)
from karpy.controllers.disruption.methods.base import Budgets, Command, within_budgets
from karpy.controllers.disruption.methods.simulation import buffer_room
from karpy.kube.offload import run_off_loop
from karpy.state import Cluster

__all__ = [
    "CONSOLIDATION_TYPE_EMPTY",
    "REASON_UNCONSOLIDATABLE",
    "Emptiness",
    "consolidation_enabled",
]

CONSOLIDATION_TYPE_EMPTY: Final = "empty"


def consolidation_enabled(c: Candidate, events: DedupingEvents | None) -> bool:
    """The NodePool's `consolidateAfter` is not `Never`; otherwise say so on the node and
    NodeClaim (at most every 15 minutes)."""
    if c.nodepool.spec.disruption.consolidate_after_duration() is not None:
        return True
    if events is not None:
        publish_unconsolidatable(
            events,
            c.node.node,
            c.node.nodeclaim,
            message=f"NodePool {quoted(c.nodepool_name)} has consolidation disabled",
        )
    return False


def _key(c: Candidate) -> str:
    return c.key


def _oldest_first(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (c.created, c.name))


class Emptiness:
    """The first method: empty, consolidatable nodes go, within the `Empty` budget."""

    reason: Final = cond.DISRUPTION_REASON_EMPTY
    consolidation_type: Final = CONSOLIDATION_TYPE_EMPTY
    needs_validation: Final = True
    graceful: Final = True

    def __init__(
        self, *, events: DedupingEvents | None = None, cluster: Cluster | None = None
    ) -> None:
        self.events = events
        self.cluster = cluster
        """With CapacityBuffers (their gate): empty nodes whose room a buffer needs stay."""

    def should_disrupt(self, candidate: Candidate) -> bool:
        if not consolidation_enabled(candidate, self.events):
            return False
        if candidate.nodepool.is_static:
            return False
        if not is_condition_true(candidate.node.nodeclaim, cond.NODECLAIM_CONSOLIDATABLE):
            return False
        return candidate.is_empty()

    async def compute(self, candidates: Sequence[Candidate], budgets: Budgets) -> Command:
        chosen = within_budgets(_oldest_first(candidates), budgets)
        return self._command(await self._leave_buffer_room(chosen))

    async def validate(
        self, command: Command, candidates: Sequence[Candidate], budgets: Budgets
    ) -> Command:
        keys = command.keys()
        still = [c for c in _oldest_first(candidates) if c.key in keys]
        return self._command(await self._leave_buffer_room(within_budgets(still, budgets)))

    async def _leave_buffer_room(self, chosen: list[Candidate]) -> list[Candidate]:
        """An empty node is not empty to a CapacityBuffer whose virtual pods need its room."""
        if self.cluster is None or not chosen:
            return chosen
        snapshot = self.cluster.snapshot()
        if not snapshot.buffers:
            return chosen
        return await run_off_loop(buffer_room, snapshot, chosen, _key)

    def _command(self, chosen: Sequence[Candidate]) -> Command:
        if not chosen:
            return Command()
        return Command(
            candidates=tuple(chosen),
            reason=self.reason,
            consolidation_type=self.consolidation_type,
            savings=None,
            pods=0,
        )
