"""StaticDrift: replace the drifted nodes of static NodePools (`spec.replicas`), as Karpenter's.

A static node is not simulated: its replacement is one more node of the NodePool's template
(`static.claims.static_nodeclaim`), launched and initialized before the drifted node goes.
One node per pass, within the NodePool's `Drifted` budget, drifted longest first; nothing while
the NodePool still has a surplus to scale down, and nothing (a `DisruptionBlocked` event) while
`limits.nodes` leaves no room for the replacement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import structlog

from karpy.apis.objects import get_condition, is_condition_true
from karpy.apis.v1 import conditions as cond
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.events import DedupingEvents, publish_blocked
from karpy.controllers.disruption.methods.base import Budgets, Command
from karpy.controllers.static.claims import node_limit, nodepool_counts, static_nodeclaim
from karpy.state import Cluster

__all__ = ["StaticDrift"]

AT_LIMIT: Final = "static NodePool is at its node limit and cannot stage a replacement"

log = structlog.get_logger("karpy.controllers.disruption")


def _drifted_since(c: Candidate) -> str:
    found = get_condition(c.node.nodeclaim, cond.NODECLAIM_DRIFTED) or {}
    return str(found.get("lastTransitionTime") or "")


class StaticDrift:
    """Drifted nodes of static NodePools are replaced by the template, one per pass."""

    reason: Final = cond.DISRUPTION_REASON_DRIFTED
    consolidation_type: Final = ""
    needs_validation: Final = False
    graceful: Final = False

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud_provider: CloudProvider,
        events: DedupingEvents | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud_provider = cloud_provider
        self.events = events

    def should_disrupt(self, candidate: Candidate) -> bool:
        return candidate.nodepool.is_static and is_condition_true(
            candidate.node.nodeclaim, cond.NODECLAIM_DRIFTED
        )

    async def compute(self, candidates: Sequence[Candidate], budgets: Budgets) -> Command:
        ordered = sorted(candidates, key=lambda c: (_drifted_since(c), c.name))
        claims = self.cluster.nodeclaims()
        for c in ordered:
            if budgets.get(c.nodepool_name, 0) <= 0:
                continue
            raw = self.cluster.nodepool_informer.get(c.nodepool_name)
            if raw is None:
                continue
            counts = nodepool_counts(c.nodepool_name, claims)
            if len(counts.running) > (c.nodepool.spec.replicas or 0):
                continue  # scale-down first: the surplus goes, not a replacement
            limit = node_limit(raw)
            if limit is not None and counts.total >= limit:
                self._blocked(c, AT_LIMIT)
                continue
            types = await self.cloud_provider.get_instance_types(c.nodepool)
            replacement = static_nodeclaim(raw, types)
            if replacement is None:
                self._blocked(c, "no instance type satisfies the static NodePool's requirements")
                continue
            return Command(
                candidates=(c,),
                replacements=(replacement,),
                reason=self.reason,
                consolidation_type=self.consolidation_type,
                pods=len(c.node.reschedulable_pods()),
            )
        return Command()

    def _blocked(self, c: Candidate, message: str) -> None:
        log.info("static drift blocked", Node={"name": c.node.node_name}, reason=message)
        if self.events is None:
            return
        publish_blocked(
            self.events, c.node.node, c.node.nodeclaim, message=message, key=self.reason
        )

    async def validate(
        self, command: Command, candidates: Sequence[Candidate], budgets: Budgets
    ) -> Command:
        return command
