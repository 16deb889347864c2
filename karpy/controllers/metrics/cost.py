"""`karpenter_nodepools_cost_total`: per NodePool, the summed hourly price of its NodeClaims'
offerings, at the prices the scheduler uses (NodeOverlay adjustments included, as the provider
applies them to the catalogue it returns). Refreshed every 10 s, as Karpenter's `metrics.cost`
controller, so it follows NodeClaims coming and going and prices refreshing.

The same figure goes to the NodePool's `status.cost` (karpy only; a `kubectl get nodepools -o
wide` column), written only when it changed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import structlog
from prometheus_client import Gauge

from karpy.apis.descriptors import NODEPOOLS
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import labels as wk
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.common.status import patch_status
from karpy.controllers.metrics.upstream import KARPENTER_METRICS
from karpy.kube import Informer
from karpy.kube.client import Client
from karpy.kube.metrics import REGISTRY
from karpy.scheduling.instancetypes import InstanceType

__all__ = [
    "COST_PERIOD",
    "NODEPOOL_COST",
    "CostController",
    "claim_price",
    "cost_text",
    "nodepool_costs",
]

COST_PERIOD: Final = 10.0
COST_DIGITS: Final = 6
NAME: Final = "metrics.cost"
log = structlog.get_logger("karpy.controllers.metrics.cost")

NODEPOOL_COST: Final = Gauge(
    "karpenter_nodepools_cost_total",
    next(m.help for m in KARPENTER_METRICS if m.name == "karpenter_nodepools_cost_total"),
    ["nodepool"],
    registry=REGISTRY,
)


def cost_text(cost: float) -> str:
    """A cost as `status.cost` holds it: a decimal string of at most six decimals."""
    text = f"{cost:.{COST_DIGITS}f}".rstrip("0").rstrip(".")
    return text or "0"


def claim_price(claim: Mapping[str, Any], types: Sequence[InstanceType]) -> float | None:
    """The price of the offering a launched NodeClaim runs on (its instance type, zone and
    capacity type labels), or None before launch or when the catalogue no longer has it."""
    claim_labels = (claim.get("metadata") or {}).get("labels") or {}
    name = claim_labels.get(wk.LABEL_INSTANCE_TYPE)
    zone = claim_labels.get(wk.LABEL_TOPOLOGY_ZONE)
    capacity_type = claim_labels.get(wk.LABEL_CAPACITY_TYPE)
    if not (name and zone and capacity_type):
        return None
    for t in types:
        if t.name != name:
            continue
        for o in t.offerings:
            if o.zone == zone and o.capacity_type == capacity_type:
                return float(o.price)
    return None


def nodepool_costs(
    claims: Iterable[Mapping[str, Any]], types_by_pool: Mapping[str, Sequence[InstanceType]]
) -> dict[str, float]:
    """Per NodePool in `types_by_pool`: the summed price of its priced NodeClaims."""
    costs = dict.fromkeys(types_by_pool, 0.0)
    for claim in claims:
        pool = str(((claim.get("metadata") or {}).get("labels") or {}).get(wk.LABEL_NODEPOOL))
        if pool not in types_by_pool:
            continue
        price = claim_price(claim, types_by_pool[pool])
        if price is not None:
            costs[pool] += price
    return costs


class CostController:
    """A leader-only loop that keeps `karpenter_nodepools_cost_total` current."""

    needs_leader_election = True

    def __init__(
        self,
        *,
        cloud_provider: CloudProvider,
        nodepools: Informer,
        nodeclaims: Informer,
        client: Client | None = None,
    ) -> None:
        self.cloud_provider = cloud_provider
        self.client = client
        self.nodepools = nodepools
        self.nodeclaims = nodeclaims
        self.reported: set[str] = set()

    def __repr__(self) -> str:
        return f"<{NAME}>"

    async def refresh(self) -> dict[str, float]:
        types_by_pool: dict[str, Sequence[InstanceType]] = {}
        for raw in self.nodepools.list():
            name = str((raw.get("metadata") or {}).get("name", ""))
            try:
                types_by_pool[name] = await self.cloud_provider.get_instance_types(
                    NodePool.model_validate(raw)
                )
            except Exception as err:  # one NodePool without a catalogue must not hide the rest
                log.warning(
                    "no prices for nodepool; its cost counts as 0",
                    NodePool={"name": name},
                    error=str(err),
                )
                types_by_pool[name] = ()
        costs = nodepool_costs(self.nodeclaims.list(), types_by_pool)
        for gone in self.reported - set(costs):
            NODEPOOL_COST.remove(gone)
        for pool, cost in costs.items():
            NODEPOOL_COST.labels(pool).set(cost)
        self.reported = set(costs)
        await self.write_status(costs)
        return costs

    async def write_status(self, costs: Mapping[str, float]) -> None:
        """Each NodePool's `status.cost`, patched only when the rounded figure changed."""
        if self.client is None:
            return
        for raw in self.nodepools.list():
            name = str((raw.get("metadata") or {}).get("name", ""))
            if name not in costs:
                continue
            cost = cost_text(costs[name])
            if (raw.get("status") or {}).get("cost") == cost:
                continue
            try:
                await patch_status(
                    self.client,
                    resource=NODEPOOLS,
                    obj=raw,
                    status={"cost": cost},
                    optimistic_lock=False,
                )
            except Exception as err:  # the metric stays current; the next pass retries
                log.warning(
                    "could not write nodepool cost", NodePool={"name": name}, error=str(err)
                )

    async def start(self, stop: asyncio.Event) -> None:
        structlog.contextvars.bind_contextvars(controller=NAME)
        try:
            while not stop.is_set():
                await self.refresh()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=COST_PERIOD)
        finally:
            for pool in self.reported:
                NODEPOOL_COST.remove(pool)
            self.reported = set()
