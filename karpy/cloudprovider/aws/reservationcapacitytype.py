"""`capacityreservation.capacitytype`: demote NodeClaims and Nodes whose reservation is gone.

An instance launched into an on-demand capacity reservation keeps running when the reservation
ends or is cancelled; EC2 then bills it as on-demand and reports it outside any reservation.
As Karpenter does, every minute the instances karpy launched are listed, and a NodeClaim
labelled `karpenter.sh/capacity-type: reserved` whose instance is now on-demand gets
`on-demand` and loses `karpenter.k8s.aws/capacity-reservation-id`; so does its registered Node.
Scheduling, consolidation prices and the reservation counts then see it as what it is. Only
that direction is synced (an on-demand instance never becomes reserved).
"""

from __future__ import annotations

from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.v1.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    LABEL_CAPACITY_TYPE,
    LABEL_NODE_REGISTERED,
)
from karpy.cloudprovider.aws.instances import AWSInstances
from karpy.kube import Client, Clock, Informer, NotFoundError, RealClock, Result
from karpy.kube.builder import Builder, singleton
from karpy.kube.resources import NODES

__all__ = ["NAME", "PERIOD", "ReservationCapacityType"]

NAME: Final = "capacityreservation.capacitytype"
PERIOD: Final = 60.0
DEMOTION: Final = {
    "metadata": {
        "labels": {
            LABEL_CAPACITY_TYPE: CAPACITY_TYPE_ON_DEMAND,
            aws.LABEL_CAPACITY_RESERVATION_ID: None,
        }
    }
}
log = structlog.get_logger("karpy.cloudprovider.aws.capacityreservation")

JSON = dict[str, Any]


def _labels(obj: JSON) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _deleting(obj: JSON) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


class ReservationCapacityType:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodeclaims: Informer,
        nodes: Informer,
        instances: AWSInstances,
        clock: Clock | None = None,
    ) -> None:
        self.clock = clock or RealClock()
        self.client = client
        self.nodeclaims = nodeclaims
        self.nodes = nodes
        self.instances = instances

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    async def reconcile(self, _key: str) -> Result | None:
        reserved = [
            c
            for c in self.nodeclaims.list()
            if _labels(c).get(LABEL_CAPACITY_TYPE) == CAPACITY_TYPE_RESERVED and not _deleting(c)
        ]
        if not reserved:
            return Result(requeue_after=PERIOD)
        now_on_demand = {
            claim.status.provider_id
            for claim in await self.instances.list()
            if claim.status is not None
            and claim.status.provider_id
            and (claim.metadata.labels or {}).get(LABEL_CAPACITY_TYPE) == CAPACITY_TYPE_ON_DEMAND
        }
        for claim in reserved:
            provider_id = (claim.get("status") or {}).get("providerID")
            if provider_id not in now_on_demand:
                continue
            name = str((claim.get("metadata") or {}).get("name"))
            try:
                await self.client.patch(NODECLAIMS, name, DEMOTION)
            except NotFoundError:
                continue
            for node in self.nodes.list():
                if (node.get("spec") or {}).get("providerID") != provider_id or _deleting(node):
                    continue
                labels = _labels(node)
                # An unregistered Node gets its labels from the NodeClaim when it registers.
                if labels.get(LABEL_NODE_REGISTERED) != "true":
                    continue
                if labels.get(LABEL_CAPACITY_TYPE) != CAPACITY_TYPE_RESERVED:
                    continue
                try:
                    await self.client.patch(NODES, str(node["metadata"]["name"]), DEMOTION)
                except NotFoundError:
                    continue
            log.info(
                "updated capacity type for nodeclaim: its capacity reservation is gone",
                NodeClaim={"name": name},
            )
        return Result(requeue_after=PERIOD)
