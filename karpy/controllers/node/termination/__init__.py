"""Node termination: the `karpenter.sh/termination` finalizer of Nodes (`node.termination`)
and the `eviction-queue` that drains them through the Eviction API."""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS
from karpy.controllers.context import ControllerContext
from karpy.controllers.node.termination.controller import MIN_DRAIN_TIME, NodeTerminationController
from karpy.controllers.node.termination.eviction import EvictionQueue, PodKey
from karpy.kube import NODES, PODS
from karpy.kube.resources import PERSISTENTVOLUMECLAIMS, VOLUMEATTACHMENTS

__all__ = ["MIN_DRAIN_TIME", "EvictionQueue", "NodeTerminationController", "PodKey", "register"]


def register(ctx: ControllerContext) -> None:
    nodes = ctx.informer(NODES)
    pods = ctx.informer(PODS)
    queue = EvictionQueue(
        client=ctx.client, pods=pods, nodes=nodes, events=ctx.events, clock=ctx.clock
    )
    ctx.add(queue)
    ctx.add(
        NodeTerminationController(
            client=ctx.client,
            nodes=nodes,
            nodeclaims=ctx.informer(NODECLAIMS),
            pods=pods,
            volume_attachments=ctx.informer(VOLUMEATTACHMENTS),
            claims=ctx.informer(PERSISTENTVOLUMECLAIMS),
            cloud_provider=ctx.cloud_provider,
            events=ctx.events,
            eviction_queue=queue,
            clock=ctx.clock,
        )
    )
