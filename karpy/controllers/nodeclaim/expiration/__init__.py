"""NodeClaim expiration: forceful deletion at `creationTimestamp + expireAfter`."""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS
from karpy.controllers.common.metrics import count_disrupted
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodeclaim.expiration.controller import REASON_EXPIRED, ExpirationController

__all__ = ["REASON_EXPIRED", "ExpirationController", "register"]


def register(ctx: ControllerContext) -> None:
    ctx.add(
        ExpirationController(
            client=ctx.client,
            nodeclaims=ctx.informer(NODECLAIMS),
            clock=ctx.clock,
            on_disrupted=count_disrupted,
        )
    )
