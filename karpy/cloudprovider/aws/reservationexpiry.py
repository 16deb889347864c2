"""`capacityreservation.expiration`: delete the NodeClaims of capacity blocks about to end.

EC2 starts taking a capacity block's instances back 30 minutes before the block ends, and warns
10 minutes before that. Karpenter deletes (drains) the NodeClaims launched into a block once it
is `expiring` (40 minutes before its end), so the pods move before EC2 acts, and so does karpy:
every minute, the reservations named by NodeClaims' `karpenter.k8s.aws/capacity-reservation-id`
labels are looked up by id (through the shared reservation cache), and the NodeClaims of those
that are expiring are deleted, a normal graceful termination.
"""

from __future__ import annotations

from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import CapacityReservationSelectorTerm
from karpy.apis.descriptors import NODECLAIMS
from karpy.cloudprovider.aws.reservations import CapacityReservations, reservation_status
from karpy.kube import Client, Clock, Informer, NotFoundError, RealClock, Result
from karpy.kube.builder import Builder, singleton

__all__ = ["NAME", "PERIOD", "ReservationExpiration"]

NAME: Final = "capacityreservation.expiration"
PERIOD: Final = 60.0
log = structlog.get_logger("karpy.cloudprovider.aws.capacityreservation")

JSON = dict[str, Any]


class ReservationExpiration:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodeclaims: Informer,
        reservations: CapacityReservations,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodeclaims = nodeclaims
        self.reservations = reservations
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    def reserved_claims(self) -> dict[str, list[str]]:
        """Reservation id -> the names of the live NodeClaims launched into it."""
        out: dict[str, list[str]] = {}
        for claim in self.nodeclaims.list():
            meta = claim.get("metadata") or {}
            reservation = (meta.get("labels") or {}).get(aws.LABEL_CAPACITY_RESERVATION_ID)
            if reservation and not meta.get("deletionTimestamp") and meta.get("name"):
                out.setdefault(str(reservation), []).append(str(meta["name"]))
        return out

    async def reconcile(self, _key: str) -> Result | None:
        claims = self.reserved_claims()
        if not claims:
            return Result(requeue_after=PERIOD)
        terms = [CapacityReservationSelectorTerm.model_validate({"id": rid}) for rid in claims]
        now = self.clock.wall()
        expiring = []
        for raw in await self.reservations.select(terms):
            status = reservation_status(raw, now)
            if status is not None and status.state == "expiring":
                expiring.append(status.id)
        for rid in sorted(expiring):
            for name in claims.get(rid, ()):
                try:
                    await self.client.delete(NODECLAIMS, name)
                except NotFoundError:
                    continue
                log.info(
                    "initiating delete for capacity block expiration",
                    NodeClaim={"name": name},
                    **{"capacity-reservation-id": rid},
                )
        return Result(requeue_after=PERIOD)
