"""`nodeclaim.disruption`: the cheap per-NodeClaim marking the disruption loop reads
(`Consolidatable`)."""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS, NODEPOOLS
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodeclaim.disruption.consolidatable import (
    NAME,
    ConsolidatableController,
    consolidatable_at,
)

__all__ = ["NAME", "ConsolidatableController", "consolidatable_at", "register"]


def register(ctx: ControllerContext) -> None:
    ctx.add(
        ConsolidatableController(
            client=ctx.client,
            nodeclaims=ctx.informer(NODECLAIMS),
            nodepools=ctx.informer(NODEPOOLS),
            clock=ctx.clock,
        )
    )
