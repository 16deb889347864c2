"""The NodeClaim lifecycle: finalizer, launch, registration, initialization and liveness.

from karpy.controllers.nodeclaim.lifecycle import Lifecycle, register
"""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodeclaim.lifecycle.controller import NAME, Lifecycle
from karpy.kube.resources import NODES, PODS

__all__ = ["NAME", "Lifecycle", "register"]


def register(ctx: ControllerContext) -> None:
    lifecycle = Lifecycle(
        client=ctx.client,
        claims=ctx.informer(NODECLAIMS),
        nodes=ctx.informer(NODES),
        cloud_provider=ctx.cloud_provider,
        events=ctx.events,
        launch_timeout=ctx.settings.nodeclaim.launch_timeout,
        registration_timeout=ctx.settings.nodeclaim.registration_timeout,
        health=ctx.cluster.nodepool_health,
        cluster=ctx.cluster,
        pods=ctx.informer(PODS),
        clock=ctx.clock,
    )
    ctx.add(lifecycle)
