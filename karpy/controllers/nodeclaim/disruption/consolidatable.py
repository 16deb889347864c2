"""The `Consolidatable` condition: a NodeClaim has gone `consolidateAfter` without pod changes.

The clock starts at the NodeClaim's `status.lastPodEventTime` (kept by `nodeclaim.podevents`)
or, before any pod event, when it became Initialized. Once the time has passed the condition is
True; before it, the condition is absent and the NodeClaim is looked at again at exactly that
moment. `consolidateAfter: Never`, an uninitialized NodeClaim, or a static NodePool clear it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

import structlog

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.duration import DurationError, parse_nillable_duration
from karpy.apis.objects import get_condition, is_deleting, label, parse_time
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import LABEL_NODEPOOL
from karpy.controllers.common.status import write_conditions
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder

__all__ = ["NAME", "ConsolidatableController", "consolidatable_at"]

NAME = "nodeclaim.disruption"
log = structlog.get_logger("karpy.controllers.nodeclaim.disruption")

JSON = dict[str, Any]


def consolidate_after(pool: Mapping[str, Any]) -> timedelta | None:
    """The NodePool's `consolidateAfter`; None for `Never` (or a value that does not parse)."""
    disruption = (pool.get("spec") or {}).get("disruption") or {}
    try:
        return parse_nillable_duration(str(disruption.get("consolidateAfter", "0s")))
    except DurationError:
        return None


def consolidatable_at(claim: Mapping[str, Any], after: timedelta) -> datetime | None:
    """When the NodeClaim becomes consolidatable; None while it is not Initialized."""
    initialized = get_condition(claim, cond.NODECLAIM_INITIALIZED)
    if initialized is None or initialized.get("status") != cond.STATUS_TRUE:
        return None
    start = parse_time((claim.get("status") or {}).get("lastPodEventTime")) or parse_time(
        initialized.get("lastTransitionTime")
    )
    if start is None:
        return None
    return start + after


class ConsolidatableController:
    """Keeps `Consolidatable` on each NodeClaim in step with its NodePool's consolidateAfter."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodeclaims: Informer,
        nodepools: Informer,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodeclaims = nodeclaims
        self.nodepools = nodepools
        self.clock = clock or RealClock()
        self._pool_generations: dict[str, object] = {}

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclaims)
        builder.watches(self.nodepools, mapper=self._claims_of)
        builder.workers(10).log_kind("NodeClaim")

    def _claims_of(self, pool: JSON) -> Iterable[str]:
        """A NodePool's NodeClaims, when its spec changed (status writes are frequent and
        never change consolidateAfter)."""
        meta = pool.get("metadata") or {}
        name = str(meta.get("name", ""))
        generation = (meta.get("uid"), meta.get("generation"))
        if self._pool_generations.get(name) == generation and generation[1] is not None:
            return []
        self._pool_generations[name] = generation
        return [
            str((c.get("metadata") or {}).get("name"))
            for c in self.nodeclaims.list()
            if label(c, LABEL_NODEPOOL) == name
        ]

    async def reconcile(self, name: str) -> Result | None:
        claim = self.nodeclaims.get(name)
        if claim is None or is_deleting(claim):
            return None
        pool_name = ((claim.get("metadata") or {}).get("labels") or {}).get(LABEL_NODEPOOL)
        pool = self.nodepools.get(pool_name) if pool_name else None
        if pool is None:
            return None
        conditions = Conditions.of(claim, now=self.clock.wall())
        after = consolidate_after(pool)
        ready_at = None if after is None else consolidatable_at(claim, after)
        static = (pool.get("spec") or {}).get("replicas") is not None
        requeue: float | None = None
        if static or after is None or ready_at is None:
            conditions.remove(cond.NODECLAIM_CONSOLIDATABLE)
        elif self.clock.wall() < ready_at:
            conditions.remove(cond.NODECLAIM_CONSOLIDATABLE)
            requeue = (ready_at - self.clock.wall()).total_seconds()
        else:
            conditions.set_true(cond.NODECLAIM_CONSOLIDATABLE)
        result = await write_conditions(
            self.client, resource=NODECLAIMS, obj=claim, conditions=conditions
        )
        if result is not None:
            return result
        return Result(requeue_after=requeue) if requeue is not None else None
