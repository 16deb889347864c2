"""NodeOverlay controller (`NodeOverlay` feature gate): each overlay's `ValidationSucceeded`
and `Ready`, false for an invalid overlay or one that conflicts with another of equal weight."""

from __future__ import annotations

from karpy.apis.descriptors import NODEOVERLAYS, NODEPOOLS
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodeoverlay.status import NodeOverlayStatusController

__all__ = ["NodeOverlayStatusController", "register"]


def register(ctx: ControllerContext) -> None:
    if not ctx.settings.feature_gates.node_overlay:
        return
    ctx.add(
        NodeOverlayStatusController(
            client=ctx.client,
            overlays=ctx.informer(NODEOVERLAYS),
            nodepools=ctx.informer(NODEPOOLS),
            cloud_provider=ctx.cloud_provider,
            clock=ctx.clock,
        )
    )
