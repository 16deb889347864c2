"""Drift: replace nodes whose NodeClaim is `Drifted` (see `nodeclaim.disruption.drift`).

Candidates are taken empty ones first, then by how long they have been drifted (oldest first),
within the NodePool's budget for reason `Drifted`. For the first candidate whose pods all find a
place (on other nodes, or on new NodeClaims from the NodePools as they are now), the command
deletes it after launching those NodeClaims and waiting for them to initialize. One node per
pass, no validation delay, as Karpenter. Drift is eventual: a NodeClaim with
`terminationGracePeriod` is a candidate even when a PDB or do-not-disrupt pod blocks eviction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import structlog

from karpy.apis.objects import get_condition, is_condition_true
from karpy.apis.v1 import conditions as cond
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.events import DedupingEvents, publish_blocked
from karpy.controllers.disruption.methods.base import Budgets, Command
from karpy.controllers.disruption.methods.simulation import simulate_without
from karpy.scheduling.engine.model import NewNodeClaim
from karpy.state import Cluster

__all__ = ["CONSOLIDATION_TYPE_DRIFT", "Drift"]

CONSOLIDATION_TYPE_DRIFT: Final = ""
SHOWN_PODS: Final = 3
"""Pods named in a blocked drift's message (the rest are counted)."""

log = structlog.get_logger("karpy.controllers.disruption")


def not_all_pods_schedule(errors: Mapping[str, str]) -> str:
    """The message of a drift the simulation refused, as Karpenter words it: which pods would
    not schedule and why (a destination that has not initialized, no room, ...)."""
    keys = sorted(errors)
    shown = " ".join(f"{k} => {errors[k]}" for k in keys[:SHOWN_PODS])
    more = f" and {len(keys) - SHOWN_PODS} other(s)" if len(keys) > SHOWN_PODS else ""
    return f"Not all pods would schedule, {shown}{more}"


def _drifted_since(c: Candidate) -> str:
    found = get_condition(c.node.nodeclaim, cond.NODECLAIM_DRIFTED) or {}
    return str(found.get("lastTransitionTime") or "")


class Drift:
    """The second method: drifted nodes are replaced, one per pass, within the `Drifted` budget."""

    reason: Final = cond.DISRUPTION_REASON_DRIFTED
    consolidation_type: Final = CONSOLIDATION_TYPE_DRIFT
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
        if candidate.nodepool.is_static:
            return False
        return is_condition_true(candidate.node.nodeclaim, cond.NODECLAIM_DRIFTED)

    async def compute(self, candidates: Sequence[Candidate], budgets: Budgets) -> Command:
        ordered = sorted(candidates, key=lambda c: (not c.is_empty(), _drifted_since(c), c.name))
        for c in ordered:
            if budgets.get(c.nodepool_name, 0) <= 0:
                continue
            pods = c.node.reschedulable_pods()
            if not pods:
                return self._command(c, ())
            result = await simulate_without(self.cluster, self.cloud_provider, {c.key}, pods)
            if result.errors:
                why = not_all_pods_schedule(result.errors)
                log.info(
                    "drifted node cannot be replaced: some pods have no place",
                    Node={"name": c.node.node_name},
                    NodeClaim={"name": c.nodeclaim_name},
                    reason=why,
                )
                self._blocked(c, why)
                continue
            return self._command(c, tuple(result.node_claims), pods=len(pods))
        return Command()

    def _blocked(self, c: Candidate, message: str) -> None:
        if self.events is None:
            return
        publish_blocked(
            self.events, c.node.node, c.node.nodeclaim, message=message, key=self.reason
        )

    async def validate(
        self, command: Command, candidates: Sequence[Candidate], budgets: Budgets
    ) -> Command:
        return command

    def _command(
        self, c: Candidate, replacements: tuple[NewNodeClaim, ...], *, pods: int = 0
    ) -> Command:
        return Command(
            candidates=(c,),
            replacements=replacements,
            reason=self.reason,
            consolidation_type=self.consolidation_type,
            pods=pods,
        )
