"""The `nodeclaim.expiration` controller: NodeClaims live at most `spec.expireAfter`.

Expiration is forceful, as in Karpenter v1: at `creationTimestamp + expireAfter` the NodeClaim is
deleted whatever the disruption budgets, PodDisruptionBudgets or `do-not-disrupt` say; the drain
that follows still honours them until the NodeClaim's terminationGracePeriod runs out. Before
that moment the controller asks to look again exactly then. `expireAfter: Never` opts out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog

from karpy.apis.objects import is_deleting, label, meta, parse_time
from karpy.apis.v1 import labels
from karpy.controllers.common.objects import (
    NODECLAIMS,
    delete_exactly,
    expire_after,
)
from karpy.kube import Client, Clock, Informer, Result
from karpy.kube.builder import Builder

__all__ = ["REASON_EXPIRED", "ExpirationController"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.nodeclaim.expiration")

REASON_EXPIRED: Final = "expired"
"""The `reason` label of `karpenter_nodeclaims_disrupted_total` for expired NodeClaims."""

DisruptedHook = Callable[[Mapping[str, Any], str], None]
"""Told about every NodeClaim this controller disrupts, with the reason (counts the metric)."""


class ExpirationController:
    """Deletes NodeClaims past their expireAfter; a leader-only runnable."""

    name: Final = "nodeclaim.expiration"

    def __init__(
        self,
        *,
        client: Client,
        nodeclaims: Informer,
        clock: Clock,
        on_disrupted: DisruptedHook | None = None,
        workers: int = 10,
    ) -> None:
        self.client = client
        self.nodeclaims = nodeclaims
        self.clock = clock
        self.on_disrupted = on_disrupted
        self.workers = workers

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclaims, predicate=lambda claim: not is_deleting(claim))
        builder.workers(self.workers).log_kind("NodeClaim")

    async def reconcile(self, name: str) -> Result | None:
        claim = self.nodeclaims.get(name)
        if claim is None or is_deleting(claim):
            return None
        lifetime = expire_after(claim)
        created = parse_time(meta(claim).get("creationTimestamp"))
        if lifetime is None or created is None:
            return None
        expires = created + lifetime
        left = (expires - self.clock.wall()).total_seconds()
        if left > 0:
            return Result(requeue_after=left)
        if not await delete_exactly(self.client, resource=NODECLAIMS, obj=claim):
            return None
        log.info(
            "deleting expired nodeclaim",
            NodePool={"name": label(claim, labels.LABEL_NODEPOOL)},
        )
        if self.on_disrupted is not None:
            self.on_disrupted(claim, REASON_EXPIRED)
        return None
