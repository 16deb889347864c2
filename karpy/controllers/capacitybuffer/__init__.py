"""CapacityBuffer controller (`CapacityBuffer` feature gate): each buffer's status, resolved from
its spec as Cluster Autoscaler does (`ReadyForProvisioning`, `Provisioning`)."""

from __future__ import annotations

from karpy.apis.descriptors import CAPACITYBUFFERS
from karpy.controllers.capacitybuffer.status import CapacityBufferStatusController
from karpy.controllers.context import ControllerContext
from karpy.kube.resources import PODTEMPLATES

__all__ = ["CapacityBufferStatusController", "register"]


def register(ctx: ControllerContext) -> None:
    if not ctx.settings.feature_gates.capacity_buffer:
        return
    ctx.add(
        CapacityBufferStatusController(
            client=ctx.client,
            buffers=ctx.informer(CAPACITYBUFFERS),
            pod_templates=ctx.informer(PODTEMPLATES),
            clock=ctx.clock,
        )
    )
