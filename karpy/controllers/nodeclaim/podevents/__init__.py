"""`nodeclaim.podevents`: `status.lastPodEventTime`, the clock `consolidateAfter` runs on."""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodeclaim.podevents.controller import (
    DEDUPE_WINDOW,
    NAME,
    PodEventsController,
    is_pod_event,
)
from karpy.kube import NODES, PODS

__all__ = ["DEDUPE_WINDOW", "NAME", "PodEventsController", "is_pod_event", "register"]


def register(ctx: ControllerContext) -> None:
    ctx.add(
        PodEventsController(
            client=ctx.client,
            pods=ctx.informer(PODS),
            nodes=ctx.informer(NODES),
            nodeclaims=ctx.informer(NODECLAIMS),
            clock=ctx.clock,
        )
    )
