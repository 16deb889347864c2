"""`disruption`: the singleton loop that voluntarily removes nodes through its methods
(emptiness, drift, consolidation), within NodePool disruption budgets, after Karpenter's
validation delay; `disruption.queue`, which runs the commands; and `nodepool.budgets`, which
publishes each NodePool's budgets in its status."""

from __future__ import annotations

from karpy.apis.descriptors import NODEPOOLS
from karpy.controllers.context import ControllerContext
from karpy.controllers.disruption.budgetstatus import NodePoolBudgetsController
from karpy.controllers.disruption.consolidation.methods import (
    MultiNodeConsolidation,
    SingleNodeConsolidation,
)
from karpy.controllers.disruption.controller import (
    NAME,
    POLLING_PERIOD,
    VALIDATION_DELAY,
    DisruptionController,
)
from karpy.controllers.disruption.events import DedupingEvents
from karpy.controllers.disruption.methods import Drift, Emptiness, Method, StaticDrift
from karpy.controllers.disruption.orchestration import OrchestrationQueue, QueueController
from karpy.kube.resources import PODDISRUPTIONBUDGETS

__all__ = ["NAME", "POLLING_PERIOD", "VALIDATION_DELAY", "DisruptionController", "register"]


def methods(ctx: ControllerContext, events: DedupingEvents) -> list[Method]:
    """The methods in Karpenter's order: emptiness, static drift (gate `StaticCapacity`),
    drift, multi-node consolidation, single-node consolidation."""
    static: list[Method] = []
    if ctx.settings.feature_gates.static_capacity:
        static.append(
            StaticDrift(cluster=ctx.cluster, cloud_provider=ctx.cloud_provider, events=events)
        )
    return [
        Emptiness(
            events=events,
            cluster=ctx.cluster if ctx.settings.feature_gates.capacity_buffer else None,
        ),
        *static,
        Drift(cluster=ctx.cluster, cloud_provider=ctx.cloud_provider, events=events),
        _consolidation(ctx, MultiNodeConsolidation, events),
        _consolidation(ctx, SingleNodeConsolidation, events),
    ]


def _consolidation(
    ctx: ControllerContext,
    kind: type[MultiNodeConsolidation] | type[SingleNodeConsolidation],
    events: DedupingEvents,
) -> MultiNodeConsolidation | SingleNodeConsolidation:
    return kind(
        events=events,
        cluster=ctx.cluster,
        cloud_provider=ctx.cloud_provider,
        pdbs=ctx.informer(PODDISRUPTIONBUDGETS),
        clock=ctx.clock,
        spot_to_spot=ctx.settings.feature_gates.spot_to_spot_consolidation,
        default_spread=[c.to_constraint() for c in ctx.settings.default_topology_spread],
    )


def register(ctx: ControllerContext) -> None:
    events = DedupingEvents(ctx.events, clock=ctx.clock)
    queue = OrchestrationQueue(
        client=ctx.client,
        cluster=ctx.cluster,
        events=events,
        clock=ctx.clock,
        timeout=ctx.settings.disruption.command_timeout.total_seconds(),
    )
    controller = DisruptionController(
        client=ctx.client,
        cluster=ctx.cluster,
        events=ctx.events,
        pdbs=ctx.informer(PODDISRUPTIONBUDGETS),
        clock=ctx.clock,
        methods=methods(ctx, events),
        queue=queue,
    )
    ctx.add(controller)
    ctx.add(QueueController(queue))
    ctx.add(
        NodePoolBudgetsController(
            client=ctx.client,
            nodepools=ctx.informer(NODEPOOLS),
            nodes=ctx.cluster.nodes,
            synced=ctx.cluster.synced,
            clock=ctx.clock,
        ),
    )
