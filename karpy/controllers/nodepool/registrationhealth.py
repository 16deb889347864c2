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

from karpy.apis.descriptors import NODEPOOLS
from karpy.apis.objects import conditions_of, get_condition
from karpy.apis.v1 import conditions as cond
from karpy.controllers.nodepool.readiness import NodeClassCheck
from karpy.controllers.nodepool.status import (
    generation_of,
    set_condition,
    timestamp,
    write_conditions,
)
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
        now = timestamp(self.clock)
        current = get_condition(pool, cond.NODEPOOL_NODE_REGISTRATION_HEALTHY)
        observed = (pool.get("status") or {}).get("nodeClassObservedGeneration")
        conditions = conditions_of(pool)
        if (
            current is None
            or observed != nodeclass_generation
            or current.get("observedGeneration") != generation
        ):
            self.health.reset(name)
            conditions = set_condition(
                conditions,
                cond.NODEPOOL_NODE_REGISTRATION_HEALTHY,
                status=cond.STATUS_UNKNOWN,
                now=now,
                message=cond.MESSAGE_AWAITING_RECONCILIATION,
                observed_generation=generation,
            )
        else:
            status = self.health.status(name)
            failure = self.health.last_failure(name)
            if status is HealthStatus.HEALTHY:
                conditions = set_condition(
                    conditions,
                    cond.NODEPOOL_NODE_REGISTRATION_HEALTHY,
                    status=cond.STATUS_TRUE,
                    now=now,
                    observed_generation=generation,
                )
            elif status is HealthStatus.UNHEALTHY and failure is not None:
                conditions = set_condition(
                    conditions,
                    cond.NODEPOOL_NODE_REGISTRATION_HEALTHY,
                    status=cond.STATUS_FALSE,
                    now=now,
                    reason=failure.reason or cond.REASON_REGISTRATION_FAILED,
                    message=failure.message,
                    observed_generation=generation,
                )
        extra: JSON = {}
        if nodeclass_generation is not None:
            extra["nodeClassObservedGeneration"] = nodeclass_generation
        return await write_conditions(
            self.client, resource=NODEPOOLS, obj=pool, conditions=conditions, extra=extra
        )
