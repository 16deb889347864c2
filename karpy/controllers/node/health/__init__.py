"""`node.health`: node repair (feature gate `NodeRepair`, off by default as Karpenter's)."""

from __future__ import annotations

from karpy.controllers.context import ControllerContext
from karpy.controllers.node.health.controller import NAME, NodeHealthController, matching_policy
from karpy.kube import NODES

__all__ = ["NAME", "NodeHealthController", "matching_policy", "register"]


def register(ctx: ControllerContext) -> None:
    """Added only with the gate on and a provider that has repair policies."""
    if not ctx.settings.feature_gates.node_repair:
        return
    policies = ctx.cloud_provider.repair_policies()
    if not policies:
        return
    ctx.add(
        NodeHealthController(
            client=ctx.client,
            cluster=ctx.cluster,
            nodes=ctx.informer(NODES),
            policies=policies,
            events=ctx.events,
            clock=ctx.clock,
        )
    )
