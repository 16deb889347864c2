"""`disruption`: the singleton loop that voluntarily removes nodes (for now: empty nodes),
within NodePool disruption budgets, after Karpenter's validation delay."""

from __future__ import annotations

from karpy.controllers.context import ControllerContext
from karpy.controllers.disruption.controller import (
    NAME,
    POLLING_PERIOD,
    VALIDATION_DELAY,
    DisruptionController,
)
from karpy.kube.resources import PODDISRUPTIONBUDGETS

__all__ = ["NAME", "POLLING_PERIOD", "VALIDATION_DELAY", "DisruptionController", "register"]


def register(ctx: ControllerContext) -> None:
    ctx.add(
        DisruptionController(
            client=ctx.client,
            cluster=ctx.cluster,
            events=ctx.events,
            pdbs=ctx.informer(PODDISRUPTIONBUDGETS),
            clock=ctx.clock,
        )
    )
