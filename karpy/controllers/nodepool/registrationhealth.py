"""`nodepool.registrationhealth`: `NodeRegistrationHealthy` from recent launch outcomes.

The NodeClaim lifecycle records each launch/registration outcome in `NodePoolHealth`; this
controller is told of every outcome and writes the condition: True while fewer than half of the
last four outcomes failed, False (with the failing launch's reason, or `RegistrationFailed`)
once half or more did. When the NodePool's spec or its NodeClass changes, the history is reset
and the condition goes back to Unknown: the new configuration has not been tried yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODEPOOLS
from karpy.apis.objects import get_condition
from karpy.apis.v1 import conditions as cond
from karpy.controllers.common.status import generation_of, write_conditions
from karpy.controllers.nodepool.readiness import NodeClassCheck
from karpy.kube import Client, Clock, Informer, RealClock, Resource, Result
from karpy.kube.builder import Builder
from karpy.state.nodepoolhealth import HealthStatus, NodePoolHealth

__all__ = ["NAME", "NodePoolRegistrationHealthController"]

NAME = "nodepool.registrationhealth"

JSON = dict[str, Any]


class NodePoolRegistrationHealthController:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodepools: Informer,
        nodeclasses: Mapping[Resource, Informer],
        health: NodePoolHealth,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodepools = nodepools
        self.check = NodeClassCheck(nodeclasses)
        self.health = health
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools).workers(10).log_kind("NodePool")
        self.check.watch(builder, self.nodepools)
        self.health.subscribe(builder.enqueuer().add)

    async def reconcile(self, name: str) -> Result | None:
        pool = self.nodepools.get(name)
        if pool is None:
            self.health.reset(name)
            return None
        _, nodeclass = self.check.find(pool)
        if nodeclass is None:
            return None  # nothing can launch; readiness reports why
        nodeclass_generation = generation_of(nodeclass)
        generation = generation_of(pool)
        current = get_condition(pool, cond.NODEPOOL_NODE_REGISTRATION_HEALTHY)
        observed = (pool.get("status") or {}).get("nodeClassObservedGeneration")
        conditions = Conditions.of(pool, now=self.clock.wall())
        if (
            current is None
            or observed != nodeclass_generation
            or current.get("observedGeneration") != generation
        ):
            self.health.reset(name)
            conditions.set_unknown(
                cond.NODEPOOL_NODE_REGISTRATION_HEALTHY,
                message=cond.MESSAGE_AWAITING_RECONCILIATION,
            )
        else:
            status = self.health.status(name)
            failure = self.health.last_failure(name)
            if status is HealthStatus.HEALTHY:
                conditions.set_true(cond.NODEPOOL_NODE_REGISTRATION_HEALTHY)
            elif status is HealthStatus.UNHEALTHY and failure is not None:
                conditions.set_false(
                    cond.NODEPOOL_NODE_REGISTRATION_HEALTHY,
                    reason=failure.reason or cond.REASON_REGISTRATION_FAILED,
                    message=failure.message,
                )
        extra: JSON = {}
        if nodeclass_generation is not None:
            extra["nodeClassObservedGeneration"] = nodeclass_generation
        return await write_conditions(
            self.client, resource=NODEPOOLS, obj=pool, conditions=conditions, extra=extra
        )
