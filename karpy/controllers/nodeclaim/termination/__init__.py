"""NodeClaim termination: the `karpenter.sh/termination` finalizer of NodeClaims.

`nodeclaim.termination` acts only on NodeClaims being deleted; `nodeclaim.lifecycle` (launch,
registration, initialization, liveness) leaves those alone, so the two never write the same
NodeClaim for the same purpose.
"""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodeclaim.termination.controller import NodeClaimTermination
from karpy.kube import NODES

__all__ = ["NodeClaimTermination", "register"]


def register(ctx: ControllerContext) -> None:
    ctx.add(
        NodeClaimTermination(
            client=ctx.client,
            nodeclaims=ctx.informer(NODECLAIMS),
            nodes=ctx.informer(NODES),
            cloud_provider=ctx.cloud_provider,
            clock=ctx.clock,
        )
    )
