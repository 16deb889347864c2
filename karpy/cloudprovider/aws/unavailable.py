"""The unavailable-offerings (ICE) cache: after EC2 answers a launch with an
insufficient-capacity error, that (capacity type, instance type, zone) is left out of every
offering for 3 minutes, so the next launch asks for something else (reference §3.3).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, Final

from karpy.apis.v1.labels import CAPACITY_TYPE_SPOT

__all__ = ["UNAVAILABLE_OFFERINGS_TTL", "UNFULFILLABLE_CAPACITY_CODES", "UnavailableOfferings"]

UNAVAILABLE_OFFERINGS_TTL: Final = timedelta(minutes=3)

# CreateFleet error codes that mean "no capacity for this offering right now".
UNFULFILLABLE_CAPACITY_CODES: Final = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientFreeAddressesInSubnet",
        "MaxFleetCountExceeded",
        "ReservationCapacityExceeded",
    }
)


SPOT_SERVICE_LINKED_ROLE_CODE: Final = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"


class UnavailableOfferings:
    """An in-memory TTL set of `<capacity type>:<instance type>:<zone>` keys.

    `clock` returns seconds (monotonic by default) so tests can move time. `seq_num` grows on
    every change, which lets callers cache offerings and notice when to rebuild them."""

    def __init__(
        self,
        *,
        ttl: timedelta = UNAVAILABLE_OFFERINGS_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl.total_seconds()
        self._clock = clock
        self._expiry: dict[str, float] = {}
        self._capacity_types: dict[str, float] = {}
        self.seq_num = 0

    @staticmethod
    def key(capacity_type: str, instance_type: str, zone: str) -> str:
        return f"{capacity_type}:{instance_type}:{zone}"

    def mark_unavailable(self, capacity_type: str, instance_type: str, zone: str) -> None:
        """Leave this offering out for the TTL (a repeat restarts the TTL)."""
        self._expiry[self.key(capacity_type, instance_type, zone)] = self._clock() + self._ttl
        self.seq_num += 1

    def mark_capacity_type_unavailable(self, capacity_type: str) -> None:
        """Leave a whole capacity type out (spot without the service-linked role)."""
        self._capacity_types[capacity_type] = self._clock() + self._ttl
        self.seq_num += 1

    def record_fleet_errors(self, errors: Iterable[Mapping[str, Any]], capacity_type: str) -> bool:
        """Mark the offerings a CreateFleet response's `Errors` say have no capacity; returns
        whether every error was such a capacity error (the launch then failed for capacity,
        not for a reason to report). Missing a service-linked role rules out all of spot."""
        only_capacity = True
        for error in errors:
            code = str(error.get("ErrorCode") or "")
            if code == SPOT_SERVICE_LINKED_ROLE_CODE:
                self.mark_capacity_type_unavailable(CAPACITY_TYPE_SPOT)
                continue
            if code not in UNFULFILLABLE_CAPACITY_CODES:
                only_capacity = False
                continue
            overrides = (error.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            name, zone = overrides.get("InstanceType"), overrides.get("AvailabilityZone")
            if name and zone:
                self.mark_unavailable(capacity_type, str(name), str(zone))
        return only_capacity

    def is_unavailable(self, capacity_type: str, instance_type: str, zone: str) -> bool:
        now = self._clock()
        until = self._capacity_types.get(capacity_type)
        if until is not None and until > now:
            return True
        until = self._expiry.get(self.key(capacity_type, instance_type, zone))
        return until is not None and until > now

    def cleanup(self) -> None:
        """Drop expired entries (callers need not: expired entries already read as available)."""
        now = self._clock()
        for table in (self._expiry, self._capacity_types):
            for key in [k for k, until in table.items() if until <= now]:
                del table[key]

    def active(self) -> frozenset[str]:
        """The keys unavailable right now (capacity types as `<type>:*:*`): a cache of
        offerings built for one value is valid exactly as long as this returns it."""
        self.cleanup()
        return frozenset(self._expiry) | {f"{ct}:*:*" for ct in self._capacity_types}

    def __len__(self) -> int:
        self.cleanup()
        return len(self._expiry) + len(self._capacity_types)
