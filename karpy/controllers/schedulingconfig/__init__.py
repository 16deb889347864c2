"""SchedulingConfig controllers (karpy's extension): the configs' status, and the NodePool
condition saying whether the configs leave it satisfiable."""

from __future__ import annotations

from karpy.apis.descriptors import NODEPOOLS, SCHEDULINGCONFIGS
from karpy.controllers.context import ControllerContext
from karpy.controllers.schedulingconfig.compatibility import NodePoolSchedulingConfigController
from karpy.controllers.schedulingconfig.status import SchedulingConfigStatusController

__all__ = ["NodePoolSchedulingConfigController", "SchedulingConfigStatusController", "register"]


def register(ctx: ControllerContext) -> None:
    configs = ctx.informer(SCHEDULINGCONFIGS)
    nodepools = ctx.informer(NODEPOOLS)
    ctx.add(
        SchedulingConfigStatusController(
            client=ctx.client, configs=configs, nodepools=nodepools, clock=ctx.clock
        )
    )
    ctx.add(
        NodePoolSchedulingConfigController(
            client=ctx.client, nodepools=nodepools, configs=configs, clock=ctx.clock
        )
    )
