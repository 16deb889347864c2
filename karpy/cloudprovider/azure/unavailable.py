"""The Azure provider's unavailable-offerings (ICE) cache: after ARM refuses a VM for capacity or
quota, the offerings the error speaks for are left out of every instance type until a TTL passes,
so the next launch asks for something else instead of repeating the refused request.

The same semantics as the AWS provider's cache (a key per capacity type, SKU and zone; a whole
capacity type can be ruled out; a change bumps `seq_num`), with TTLs and scopes as the upstream
Azure provider (`pkg/providers/instance/offerings`) applies them per error:

| error | offerings left out | TTL |
| --- | --- | --- |
| `SkuNotAvailable` | the SKU in every zone, for the capacity type | 1 h spot, 23 h on-demand |
| `AllocationFailed` | the SKU in every zone, both capacity types | 1 h |
| `ZonalAllocationFailed` | the SKU's family in that zone from its vCPUs up, both types | 1 h |
| `OverconstrainedZonalAllocationRequest` | the SKU in that zone, for the capacity type | 1 h |
| `OverconstrainedAllocationRequest` | the SKU in every zone, for the capacity type | 1 h |
| family vCPU quota | the SKU in every zone, for the capacity type | 1 h at limit 0, else 3 min |
| spot (low-priority) vCPU quota | all of spot | 1 h |
| regional vCPU quota | all of the capacity type | 30 min |
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Final

from karpy.apis.v1.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT

__all__ = [
    "ALLOCATION_FAILURE_TTL",
    "DEFAULT_TTL",
    "REGIONAL_QUOTA_TTL",
    "SKU_NOT_AVAILABLE_ON_DEMAND_TTL",
    "SKU_NOT_AVAILABLE_SPOT_TTL",
    "SUBSCRIPTION_QUOTA_TTL",
    "AzureUnavailableOfferings",
    "LaunchFailure",
    "classify",
]

DEFAULT_TTL: Final = timedelta(minutes=3)
SUBSCRIPTION_QUOTA_TTL: Final = timedelta(hours=1)
ALLOCATION_FAILURE_TTL: Final = timedelta(hours=1)
SKU_NOT_AVAILABLE_SPOT_TTL: Final = timedelta(hours=1)
SKU_NOT_AVAILABLE_ON_DEMAND_TTL: Final = timedelta(hours=23)
REGIONAL_QUOTA_TTL: Final = timedelta(minutes=30)

CAPACITY_TYPES: Final = (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT)

# What kind of refusal an ARM error is (`classify`).
SKU_NOT_AVAILABLE: Final = "SkuNotAvailable"
ALLOCATION_FAILED: Final = "AllocationFailed"
ZONAL_ALLOCATION_FAILED: Final = "ZonalAllocationFailed"
OVERCONSTRAINED_ZONAL: Final = "OverconstrainedZonalAllocationRequest"
OVERCONSTRAINED: Final = "OverconstrainedAllocationRequest"
FAMILY_QUOTA: Final = "FamilyQuota"
SPOT_QUOTA: Final = "LowPriorityQuota"
REGIONAL_QUOTA: Final = "RegionalQuota"


def classify(code: str, message: str) -> str | None:
    """The kind of capacity or quota refusal an ARM error is, or None for any other error.
    Quota errors are `OperationNotAllowed` (or `QuotaExceeded`) told apart by their message:
    "LowPriorityCores" for spot, "Family Cores" for a SKU family, "Total Regional Cores" for the
    region."""
    if code in {
        SKU_NOT_AVAILABLE,
        ALLOCATION_FAILED,
        ZONAL_ALLOCATION_FAILED,
        OVERCONSTRAINED_ZONAL,
        OVERCONSTRAINED,
    }:
        return code
    if code not in {"OperationNotAllowed", "QuotaExceeded"}:
        return None
    text = message.lower()
    if "lowprioritycores" in text or "low priority cores" in text:
        return SPOT_QUOTA
    if "family cores" in text:
        return FAMILY_QUOTA
    if "regional" in text and "quota" in text:
        return REGIONAL_QUOTA
    if "quota" in text:
        return FAMILY_QUOTA
    return None


class LaunchFailure:
    """One refused VM: the SKU (with its family and vCPUs), zone and capacity type asked for."""

    __slots__ = ("capacity_type", "family", "sku", "vcpus", "zone", "zones")

    def __init__(
        self,
        *,
        sku: str,
        family: str,
        vcpus: int,
        zone: str,
        capacity_type: str,
        zones: Iterable[str],
    ) -> None:
        self.sku = sku
        self.family = family
        self.vcpus = vcpus
        self.zone = zone
        self.capacity_type = capacity_type
        self.zones = tuple(zones)
        """Every zone the SKU is offered in (`""` for a regional SKU)."""


class AzureUnavailableOfferings:
    """In-memory TTL marks; `clock` returns seconds (monotonic by default) so tests move time."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._offerings: dict[tuple[str, str, str], float] = {}
        self._families: dict[tuple[str, str, str], tuple[int, float]] = {}
        self._capacity_types: dict[str, float] = {}
        self.seq_num = 0

    def mark(self, capacity_type: str, sku: str, zone: str, ttl: timedelta = DEFAULT_TTL) -> None:
        """Leave (capacity type, SKU, zone) out for `ttl`; a repeat restarts the TTL."""
        self._offerings[(capacity_type, sku, zone)] = self._clock() + ttl.total_seconds()
        self.seq_num += 1

    def mark_family(
        self, capacity_type: str, family: str, zone: str, *, vcpus: int, ttl: timedelta
    ) -> None:
        """Leave out every SKU of `family` in `zone` with at least `vcpus` vCPUs (the smallest
        refusal so far wins while it lasts)."""
        key = (capacity_type, family, zone)
        now = self._clock()
        current = self._families.get(key)
        if current is not None and current[1] > now:
            vcpus = min(vcpus, current[0])
        self._families[key] = (vcpus, now + ttl.total_seconds())
        self.seq_num += 1

    def mark_capacity_type(self, capacity_type: str, ttl: timedelta) -> None:
        self._capacity_types[capacity_type] = self._clock() + ttl.total_seconds()
        self.seq_num += 1

    def is_unavailable(
        self, capacity_type: str, sku: str, zone: str, *, family: str = "", vcpus: int = 0
    ) -> bool:
        now = self._clock()
        if self._capacity_types.get(capacity_type, 0.0) > now:
            return True
        if self._offerings.get((capacity_type, sku, zone), 0.0) > now:
            return True
        if family:
            mark = self._families.get((capacity_type, family, zone))
            if mark is not None and mark[1] > now and vcpus >= mark[0]:
                return True
        return False

    def record(self, kind: str, failure: LaunchFailure, *, message: str = "") -> None:
        """Mark what a refusal of `kind` (from `classify`) rules out."""
        f = failure
        every_zone = f.zones or (f.zone,)
        if kind == SKU_NOT_AVAILABLE:
            ttl = (
                SKU_NOT_AVAILABLE_SPOT_TTL
                if f.capacity_type == CAPACITY_TYPE_SPOT
                else SKU_NOT_AVAILABLE_ON_DEMAND_TTL
            )
            for zone in every_zone:
                self.mark(f.capacity_type, f.sku, zone, ttl)
        elif kind == ALLOCATION_FAILED:
            for zone in every_zone:
                for capacity_type in CAPACITY_TYPES:
                    self.mark(capacity_type, f.sku, zone, ALLOCATION_FAILURE_TTL)
        elif kind == ZONAL_ALLOCATION_FAILED:
            for capacity_type in CAPACITY_TYPES:
                self.mark_family(
                    capacity_type, f.family, f.zone, vcpus=f.vcpus, ttl=ALLOCATION_FAILURE_TTL
                )
        elif kind == OVERCONSTRAINED_ZONAL:
            self.mark(f.capacity_type, f.sku, f.zone, ALLOCATION_FAILURE_TTL)
        elif kind == OVERCONSTRAINED:
            for zone in every_zone:
                self.mark(f.capacity_type, f.sku, zone, ALLOCATION_FAILURE_TTL)
        elif kind == FAMILY_QUOTA:
            ttl = SUBSCRIPTION_QUOTA_TTL if "current limit: 0" in message.lower() else DEFAULT_TTL
            for zone in every_zone:
                self.mark(f.capacity_type, f.sku, zone, ttl)
        elif kind == SPOT_QUOTA:
            self.mark_capacity_type(CAPACITY_TYPE_SPOT, SUBSCRIPTION_QUOTA_TTL)
        elif kind == REGIONAL_QUOTA:
            self.mark_capacity_type(f.capacity_type, REGIONAL_QUOTA_TTL)

    def cleanup(self) -> None:
        now = self._clock()
        for key in [k for k, until in self._offerings.items() if until <= now]:
            del self._offerings[key]
        for fkey in [k for k, (_, until) in self._families.items() if until <= now]:
            del self._families[fkey]
        for ct in [k for k, until in self._capacity_types.items() if until <= now]:
            del self._capacity_types[ct]

    def __len__(self) -> int:
        self.cleanup()
        return len(self._offerings) + len(self._families) + len(self._capacity_types)
