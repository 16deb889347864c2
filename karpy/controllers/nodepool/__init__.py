"""NodePool controllers: validation, NodeClass readiness, registration health, counter, hash
annotations and the `Ready` roll-up (Karpenter's `nodepool.*` controllers). The budget
summary in `status.disruption` is the disruption package's (`nodepool.budgets`)."""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS, NODEPOOLS
from karpy.controllers.context import ControllerContext
from karpy.controllers.nodepool.counter import NodePoolCounterController
from karpy.controllers.nodepool.hashcontroller import NodePoolHashController
from karpy.controllers.nodepool.readiness import NodePoolReadinessController
from karpy.controllers.nodepool.registrationhealth import NodePoolRegistrationHealthController
from karpy.controllers.nodepool.validation import NodePoolValidationController

__all__ = ["register"]


def register(ctx: ControllerContext) -> None:
    nodepools = ctx.informer(NODEPOOLS)
    nodeclasses = {r: ctx.informer(r) for r in ctx.nodeclasses}
    ctx.add(
        NodePoolValidationController(client=ctx.client, nodepools=nodepools, clock=ctx.clock),
    )
    ctx.add(
        NodePoolReadinessController(
            client=ctx.client, nodepools=nodepools, nodeclasses=nodeclasses, clock=ctx.clock
        ),
    )
    ctx.add(
        NodePoolRegistrationHealthController(
            client=ctx.client,
            nodepools=nodepools,
            nodeclasses=nodeclasses,
            health=ctx.nodepool_health,
            clock=ctx.clock,
        ),
    )
    ctx.add(
        NodePoolCounterController(
            client=ctx.client,
            nodepools=nodepools,
            resources_for=ctx.cluster.nodepool_resources,
            synced=ctx.cluster.synced,
            clock=ctx.clock,
        ),
    )
    ctx.add(
        NodePoolHashController(
            client=ctx.client, nodepools=nodepools, nodeclaims=ctx.informer(NODECLAIMS)
        ),
    )
