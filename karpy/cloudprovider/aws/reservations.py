"""Capacity reservations (`spec.capacityReservationSelectorTerms`, behind the `ReservedCapacity`
feature gate, on by default): on-demand capacity reservations and capacity blocks the class may
launch into, as Karpenter finds and counts them.

- Each selector term is one query: an `id` term asks for that reservation by id, a term with
  `tags`, `ownerID` or `instanceMatchCriteria` asks with the matching filters; every query
  also asks for `state=active`. Answers are kept for a minute per query (the EC2NodeClass
  controller looks again every minute, or when the first reservation ends).
- Reservations that have ended are dropped; a capacity block within 40 minutes of its end is
  `expiring` and is no longer launched into.
- The count of free instances in each reservation comes from `AvailableInstanceCount` and is
  lowered by each launch this process makes into it (and raised by each termination) until
  the next answer from EC2, so a burst of launches does not overrun a reservation.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import (
    CapacityReservationSelectorTerm,
    CapacityReservationStatus,
)
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError, error_code

__all__ = [
    "EXPIRING_WINDOW",
    "RESERVATION_POLL",
    "CapacityReservations",
    "requeue_after",
    "reservation_queries",
    "reservation_status",
]

RESERVATION_POLL: Final = timedelta(minutes=1)
EXPIRING_WINDOW: Final = timedelta(minutes=40)
MATCH_CRITERIA: Final = ("open", "targeted")
RESERVATION_TYPES: Final = ("default", "capacity-block")
NOT_FOUND: Final = "InvalidCapacityReservationId.NotFound"


def reservation_queries(
    terms: Sequence[CapacityReservationSelectorTerm],
) -> list[dict[str, Any]]:
    """The `DescribeCapacityReservations` arguments of each term (an `id` term by id, else
    by filters), always for active reservations only."""
    out: list[dict[str, Any]] = []
    for term in terms:
        active = [{"Name": "state", "Values": ["active"]}]
        if term.id:
            out.append({"CapacityReservationIds": [term.id], "Filters": active})
        if term.tags or term.instance_match_criteria or (term.owner_id and not term.id):
            filters = list(active)
            if term.owner_id:
                filters.append({"Name": "owner-id", "Values": [term.owner_id]})
            for key, value in sorted((term.tags or {}).items()):
                if value == "*":
                    filters.append({"Name": "tag-key", "Values": [key]})
                else:
                    filters.append({"Name": f"tag:{key}", "Values": [value]})
            if term.instance_match_criteria:
                filters.append(
                    {"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]}
                )
            out.append({"Filters": filters})
    return out


def _moment(raw: Any) -> datetime | None:
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return raw if raw.tzinfo else raw.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(raw).replace("Z", "+00:00"))


def reservation_status(raw: Mapping[str, Any], now: datetime) -> CapacityReservationStatus | None:
    """The status entry of one reservation, or None when karpy cannot launch into it (an
    instance match criteria or reservation type this version does not know)."""
    criteria = str(raw.get("InstanceMatchCriteria") or "")
    kind = str(raw.get("ReservationType") or "default")
    if criteria not in MATCH_CRITERIA or kind not in RESERVATION_TYPES:
        return None
    end = _moment(raw.get("EndDate"))
    expiring = kind == "capacity-block" and end is not None and now >= end - EXPIRING_WINDOW
    return CapacityReservationStatus.model_validate(
        {
            "availabilityZone": str(raw["AvailabilityZone"]),
            "endTime": end,
            "id": str(raw["CapacityReservationId"]),
            "instanceMatchCriteria": criteria,
            "instanceType": str(raw["InstanceType"]),
            "ownerID": str(raw["OwnerId"]),
            "reservationType": kind,
            "interruptible": bool(raw.get("Interruptible") or False),
            "state": "expiring" if expiring else "active",
        }
    )


def requeue_after(reservations: Sequence[CapacityReservationStatus], now: datetime) -> float:
    """Seconds until the reservations should be looked at again: a minute, or sooner when one
    ends (or turns `expiring`) before that."""
    wait = RESERVATION_POLL.total_seconds()
    for r in reservations:
        if r.end_time is None:
            continue
        end = _moment(r.end_time)
        assert end is not None
        moments = [end]
        if r.reservation_type == "capacity-block":
            moments.append(end - EXPIRING_WINDOW)
        for moment in moments:
            left = (moment - now).total_seconds()
            if left > 0:
                wait = min(wait, left)
    return max(wait, 1.0)


class CapacityReservations:
    """Finds the reservations of selector terms and counts the instances left in each."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        ttl: timedelta = RESERVATION_POLL,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._clients = clients
        self._ttl = ttl.total_seconds()
        self._clock = clock
        self._now = now
        self._queries: dict[str, tuple[float, list[Mapping[str, Any]]]] = {}
        self._available: dict[str, tuple[datetime, int]] = {}
        """Reservation id -> (when EC2 said, instances free since)."""
        self._lock = asyncio.Lock()

    async def select(
        self, terms: Sequence[CapacityReservationSelectorTerm]
    ) -> list[Mapping[str, Any]]:
        """Every reservation a term selects, once each, without those that have ended."""
        found: dict[str, Mapping[str, Any]] = {}
        async with self._lock:
            for query in reservation_queries(terms):
                for raw in await self._query(query):
                    found.setdefault(str(raw["CapacityReservationId"]), raw)
        now = self._now()
        out = []
        for raw in found.values():
            end = _moment(raw.get("EndDate"))
            if end is None or end > now:
                out.append(raw)
        return out

    async def _query(self, query: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        key = json.dumps(query, sort_keys=True)
        cached = self._queries.get(key)
        if cached is not None and self._clock() - cached[0] < self._ttl:
            return cached[1]
        found: list[Mapping[str, Any]] = []
        async with self._clients.client("ec2") as ec2:
            try:
                if "CapacityReservationIds" in query:
                    # EC2 refuses MaxResults with ids: one page.
                    response = await ec2.describe_capacity_reservations(**query)
                    found.extend(response.get("CapacityReservations") or ())
                else:
                    paginator = ec2.get_paginator("describe_capacity_reservations")
                    async for page in paginator.paginate(
                        **query, PaginationConfig={"PageSize": 1000}
                    ):
                        found.extend(page.get("CapacityReservations") or ())
            except ClientError as error:
                if error_code(error) != NOT_FOUND:
                    raise
        stamp = self._now()
        for raw in found:
            count = raw.get("AvailableInstanceCount")
            if count is not None:
                self._available[str(raw["CapacityReservationId"])] = (stamp, int(count))
        self._queries[key] = (self._clock(), found)
        return found

    def available(self, reservation_id: str) -> int:
        """Instances the reservation can still take (0 when unknown)."""
        entry = self._available.get(reservation_id)
        return entry[1] if entry else 0

    def mark_launched(self, reservation_id: str) -> None:
        """One instance launched into the reservation (counted until EC2 next answers)."""
        entry = self._available.get(reservation_id)
        if entry is not None and entry[1] > 0:
            self._available[reservation_id] = (entry[0], entry[1] - 1)

    def mark_unavailable(self, reservation_id: str) -> None:
        """EC2 said the reservation is full (`ReservationCapacityExceeded`)."""
        entry = self._available.get(reservation_id)
        self._available[reservation_id] = (entry[0] if entry else self._now(), 0)

    def mark_terminated(self, reservation_id: str) -> None:
        """One instance of the reservation terminated: its slot is free again."""
        entry = self._available.get(reservation_id)
        if entry is not None:
            self._available[reservation_id] = (entry[0], entry[1] + 1)
