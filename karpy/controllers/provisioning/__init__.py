"""Provisioning: pending pods in, NodeClaims out (Karpenter's `provisioner` and its triggers).

from karpy.controllers.provisioning import register
"""

from __future__ import annotations

from karpy.apis.descriptors import CAPACITYBUFFERS, NODECLAIMS, SCHEDULINGCONFIGS
from karpy.controllers.context import ControllerContext
from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.nomination import NominationJanitor, nominate_pods
from karpy.controllers.provisioning.provisioner import Provisioner
from karpy.controllers.provisioning.triggers import (
    BufferTrigger,
    NodeClaimTrigger,
    NodeTrigger,
    PodTrigger,
    ProvisionerLoop,
)
from karpy.kube.informer import Informer
from karpy.kube.resources import NODES, PODS
from karpy.settings import Settings
from karpy.state.inputs import parameters

__all__ = [
    "Batcher",
    "NominationJanitor",
    "Provisioner",
    "batch_window",
    "nominate_pods",
    "register",
]


def batch_window(settings: Settings, configs: Informer) -> tuple[float, float]:
    """(idle, maximum) seconds of the batch window: the `default` SchedulingConfig's when it
    sets them, else the settings'."""
    default = configs.get("default")
    params = parameters([default] if default is not None else [])
    idle = params.batch_idle or settings.batch.idle_duration
    maximum = params.batch_max or settings.batch.max_duration
    return idle.total_seconds(), maximum.total_seconds()


def register(ctx: ControllerContext) -> None:
    """The provisioner singleton plus the pod and node triggers that feed its batcher."""
    batch = ctx.settings.batch
    configs = ctx.informer(SCHEDULINGCONFIGS)
    batcher = Batcher(
        idle=batch.idle_duration.total_seconds(),
        maximum=batch.max_duration.total_seconds(),
        clock=ctx.clock,
        window=lambda: batch_window(ctx.settings, configs),
    )
    provisioner = Provisioner(
        client=ctx.client,
        cluster=ctx.cluster,
        cloud_provider=ctx.cloud_provider,
        events=ctx.events,
        batcher=batcher,
        clock=ctx.clock,
        preference_policy=ctx.settings.preference_policy,
        min_values_policy=ctx.settings.min_values_policy,
        default_spread=[c.to_constraint() for c in ctx.settings.default_topology_spread],
    )
    ctx.add(ProvisionerLoop(provisioner, clock=ctx.clock))
    ctx.add(
        PodTrigger(
            pods=ctx.informer(PODS),
            batcher=batcher,
            clock=ctx.clock,
            capacity_coming=lambda key: bool(provisioner.capacity_coming([key])),
        )
    )
    ctx.add(NodeTrigger(nodes=ctx.informer(NODES), batcher=batcher, clock=ctx.clock))
    if ctx.settings.feature_gates.capacity_buffer:
        ctx.add(
            BufferTrigger(buffers=ctx.informer(CAPACITYBUFFERS), batcher=batcher, clock=ctx.clock)
        )
    ctx.add(NodeClaimTrigger(nodeclaims=ctx.informer(NODECLAIMS), batcher=batcher, clock=ctx.clock))
    ctx.add(
        NominationJanitor(
            client=ctx.client,
            pods=ctx.informer(PODS),
            nodes=ctx.informer(NODES),
            ledger=ctx.cluster.pod_nominations,
            clock=ctx.clock,
        )
    )
