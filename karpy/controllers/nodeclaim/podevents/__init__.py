"""`nodeclaim.podevents`: `status.lastPodEventTime`, the clock `consolidateAfter` runs on."""

from __future__ import annotations

from karpy.controllers.nodeclaim.podevents.controller import (
    DEDUPE_WINDOW,
    NAME,
    PodEventsController,
    is_pod_event,
)

__all__ = ["DEDUPE_WINDOW", "NAME", "PodEventsController", "is_pod_event"]
