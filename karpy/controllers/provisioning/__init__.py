"""Provisioning: pending pods in, NodeClaims out (Karpenter's `provisioner` and its triggers).

from karpy.controllers.provisioning import register
"""

from __future__ import annotations

from karpy.controllers.context import ControllerContext
from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.nomination import NominationJanitor, nominate_pods
from karpy.controllers.provisioning.provisioner import Provisioner
from karpy.controllers.provisioning.triggers import NodeTrigger, PodTrigger, ProvisionerLoop
from karpy.kube.resources import NODES, PODS

__all__ = ["Batcher", "NominationJanitor", "Provisioner", "nominate_pods", "register"]


def register(ctx: ControllerContext) -> None:
    """The provisioner singleton plus the pod and node triggers that feed its batcher."""
    batch = ctx.settings.batch
    batcher = Batcher(
        idle=batch.idle_duration.total_seconds(),
        maximum=batch.max_duration.total_seconds(),
        clock=ctx.clock,
    )
    provisioner = Provisioner.from_cache(
        client=ctx.client,
        cluster=ctx.cluster,
        cloud_provider=ctx.cloud_provider,
        events=ctx.events,
        batcher=batcher,
        clock=ctx.clock,
        preference_policy=ctx.settings.preference_policy,
        min_values_policy=ctx.settings.min_values_policy,
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
    ctx.add(
        NominationJanitor(
            client=ctx.client,
            pods=ctx.informer(PODS),
            nodes=ctx.informer(NODES),
            ledger=ctx.cluster.pod_nominations,
            clock=ctx.clock,
        )
    )
