"""Garbage collection: NodeClaims whose instance is gone (`nodeclaim.garbagecollection`) and
instances no NodeClaim owns (`instance.garbagecollection`).

Stale in-flight state (a NodeClaim karpy created that never launched and no longer exists) is
dropped by the cluster state itself, 15 s after the create (`karpy.state.Cluster`).
"""

from __future__ import annotations

from karpy.controllers.common.metrics import count_disrupted
from karpy.controllers.context import ControllerContext
from karpy.controllers.garbagecollection.instance import InstanceGarbageCollection
from karpy.controllers.garbagecollection.nodeclaim import NodeClaimGarbageCollection
from karpy.kube import NODES

__all__ = ["InstanceGarbageCollection", "NodeClaimGarbageCollection", "register"]


def register(ctx: ControllerContext) -> None:
    nodes = ctx.informer(NODES)
    ctx.add(
        NodeClaimGarbageCollection(
            client=ctx.client,
            nodes=nodes,
            cloud_provider=ctx.cloud_provider,
            clock=ctx.clock,
            on_disrupted=count_disrupted,
        )
    )
    ctx.add(
        InstanceGarbageCollection(
            client=ctx.client, nodes=nodes, cloud_provider=ctx.cloud_provider, clock=ctx.clock
        )
    )
