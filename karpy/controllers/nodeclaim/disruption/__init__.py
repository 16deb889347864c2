"""`nodeclaim.disruption` and `nodeclaim.drift`: the cheap per-NodeClaim marking the disruption
loop reads (`Consolidatable`, `Drifted`)."""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS, NODEPOOLS, SCHEDULINGCONFIGS
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodeclaim.disruption.consolidatable import (
    NAME,
    ConsolidatableController,
    consolidatable_at,
)
from karpy.controllers.nodeclaim.disruption.drift import DRIFT_NAME, DriftController

__all__ = [
    "DRIFT_NAME",
    "NAME",
    "ConsolidatableController",
    "DriftController",
    "consolidatable_at",
    "register",
]


def register(ctx: ControllerContext) -> None:
    ctx.add(
        ConsolidatableController(
            client=ctx.client,
            nodeclaims=ctx.informer(NODECLAIMS),
            nodepools=ctx.informer(NODEPOOLS),
            clock=ctx.clock,
        )
    )
    ctx.add(
        DriftController(
            client=ctx.client,
            nodeclaims=ctx.informer(NODECLAIMS),
            nodepools=ctx.informer(NODEPOOLS),
            cloud_provider=ctx.cloud_provider,
            nodeclasses=[ctx.informer(r) for r in ctx.nodeclasses],
            configs=ctx.informer(SCHEDULINGCONFIGS),
            clock=ctx.clock,
        )
    )
