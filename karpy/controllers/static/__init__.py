"""Static capacity (feature gate `StaticCapacity`, off by default as Karpenter's): a NodePool with
`spec.replicas` keeps exactly that many nodes whatever the pods. `static.capacity` scales it;
the disruption loop's `StaticDrift` replaces its drifted nodes; the provisioner and
consolidation leave it alone."""

from __future__ import annotations

from karpy.controllers.context import ControllerContext
from karpy.controllers.static.controller import NAME, StaticCapacityController

__all__ = ["NAME", "StaticCapacityController", "register"]


def register(ctx: ControllerContext) -> None:
    if not ctx.settings.feature_gates.static_capacity:
        return
    ctx.add(
        StaticCapacityController(
            client=ctx.client,
            cluster=ctx.cluster,
            cloud_provider=ctx.cloud_provider,
            clock=ctx.clock,
        )
    )
