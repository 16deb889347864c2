"""The scheduling engine: decide where pending pods go and which NodeClaims to launch.

Build a `SchedulingInput` (pending pods as `PodView`s, one `NodePoolTemplate` per NodePool with
its instance types, existing nodes, DaemonSet pods) and call `schedule(input)` from a worker
thread; it returns a `SchedulingResult` with the NodeClaims to create, the pods placed on
existing nodes, per-pod errors, the plan's hourly cost and a lower bound on the cost of any plan.
Pure and deterministic: no I/O, no asyncio. The types it speaks in (quantities, requirements,
taints, pod views, instance types) are the vocabulary in `karpy.scheduling`.
"""

from __future__ import annotations

from karpy.scheduling.engine.lp import warm_up
from karpy.scheduling.engine.model import (
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    SchedulingInput,
    SchedulingResult,
)
from karpy.scheduling.engine.scheduler import schedule

__all__ = [
    "ExistingNode",
    "NewNodeClaim",
    "NodePoolTemplate",
    "SchedulingInput",
    "SchedulingResult",
    "schedule",
    "warm_up",
]
