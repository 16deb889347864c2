"""EC2 instance types with their offerings (reference §2.1): what `DescribeInstanceTypes` and
`DescribeInstanceTypeOfferings` say the region sells, turned into karpy's `InstanceType`s.

The raw lists are refreshed every 12 hours (or on demand); each `list` call builds the types for
a NodeClass's capacity settings and zones, and marks every offering available or not: the zone
sells the type, the NodeClass has a subnet there, a price is known and the ICE cache does not
hold it. Types are returned even when no offering is available, as the provider contract asks.

Building every type from the raw lists takes seconds of CPU for the full catalogue, so it runs
in a worker thread (`run_off_loop`) over the lists as they stand: a refresh replaces them
instead of editing them, and a build started before a refresh is not kept. Large responses are
parsed off the loop too (`parsing.py`), so start-up and the 12-hour refresh leave lease renewals
and probes on time.
"""

from __future__ import annotations

import asyncio
import builtins
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import timedelta
from functools import lru_cache
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import CapacityReservationStatus, EC2NodeClass
from karpy.apis.aws.v1.labels import (
    LABEL_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_CAPACITY_RESERVATION_TYPE,
    LABEL_PLACEMENT_GROUP_PARTITION,
    LABEL_TOPOLOGY_ZONE_ID,
)
from karpy.apis.v1.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    LABEL_WINDOWS_BUILD,
)
from karpy.cloudprovider.aws.capacity import (
    DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    CapacitySettings,
    capacity,
    capacity_settings_for,
    overhead,
)
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.compatibility import compatible, windows_build
from karpy.cloudprovider.aws.errors import ClientError
from karpy.cloudprovider.aws.labels import architecture, requirements
from karpy.cloudprovider.aws.placementgroups import PlacementGroups
from karpy.cloudprovider.aws.pricing import PricingProvider
from karpy.cloudprovider.aws.reservations import CapacityReservations
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.kube.offload import run_off_loop
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements

__all__ = [
    "INSTANCE_TYPES_REFRESH",
    "RESERVED_PRICE_DIVISOR",
    "InstanceTypeProvider",
    "build_instance_type",
    "with_partitions",
    "with_reservations",
    "without_unavailable",
]

INSTANCE_TYPES_REFRESH: Final = timedelta(hours=12)
CAPACITY_TYPES: Final = (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT)
NO_PRICE: Final = math.inf
RESERVED_PRICE_DIVISOR: Final = 10_000_000.0
"""A reserved offering costs the on-demand price divided by this (Karpenter's rule): nearly
free, so it is launched first, yet ordered among reservations as their types are."""
RESERVED_KEPT: Final = 16
"""Lists with reserved offerings kept (per class, base list and reservation counts)."""
BUILT_KEPT: Final = 4
"""Built catalogues kept (one per distinct capacity settings and zones, i.e. per EC2NodeClass
shape), so a few classes do not rebuild each other's types on every pass."""


def build_instance_type(
    info: Mapping[str, Any],
    *,
    zones: Sequence[str],
    offered_zones: Collection[str],
    pricing: PricingProvider,
    settings: CapacitySettings,
    zone_ids: Mapping[str, str] | None = None,
    allowed_zones: Collection[str] | None = None,
    unavailable: UnavailableOfferings | None = None,
) -> InstanceType:
    """One `InstanceType`: capacity, overhead and labels from `info`, and one offering per
    (zone in `zones`) x (capacity type the type supports). A type the AMI family cannot boot
    keeps its offerings, all unavailable."""
    name = str(info["InstanceType"])
    bootable = compatible(
        info,
        settings.ami_family,
        network_interfaces=settings.network_interfaces,
        connection_tracking=settings.connection_tracking,
    )
    usage = set(info.get("SupportedUsageClasses") or ())
    ids = zone_ids or {}
    offerings: list[Offering] = []
    for zone in zones:
        extra = _zone_id_requirements(ids[zone]) if zone in ids else None
        for capacity_type in CAPACITY_TYPES:
            if capacity_type not in usage:
                continue
            price = (
                pricing.on_demand_price(name)
                if capacity_type == CAPACITY_TYPE_ON_DEMAND
                else pricing.spot_price(name, zone)
            )
            available = (
                bootable
                and price is not None
                and zone in offered_zones
                and (allowed_zones is None or zone in allowed_zones)
                and not (unavailable and unavailable.is_unavailable(capacity_type, name, zone))
            )
            offerings.append(
                Offering(
                    zone=zone,
                    capacity_type=capacity_type,
                    price=NO_PRICE if price is None else price,
                    available=available,
                    requirements=extra,
                )
            )
    cap = capacity(info, settings)
    os_name = "windows" if settings.ami_family.startswith("Windows") else "linux"
    reqs = requirements(
        info,
        os_name=os_name,
        region=pricing.region,
        zone_ids=[ids[z] for z in zones if z in ids],
    )
    build = windows_build(settings.ami_family)
    if build is not None:
        reqs.append(Requirement(LABEL_WINDOWS_BUILD, complement=False, values=(build,)))
    return InstanceType(
        name=name,
        capacity=cap,
        offerings=offerings,
        requirements=Requirements(reqs),
        overhead=overhead(info, cap, settings),
    )


def without_unavailable(
    instance_type: InstanceType, unavailable: UnavailableOfferings
) -> InstanceType:
    """`instance_type` with the offerings the ICE cache holds marked unavailable (the same
    object when it holds none of them)."""
    name = instance_type.name
    gone = [
        o.available and unavailable.is_unavailable(o.capacity_type, name, o.zone)
        for o in instance_type.offerings
    ]
    if not any(gone):
        return instance_type
    offerings = [
        Offering(
            zone=o.zone,
            capacity_type=o.capacity_type,
            price=o.price,
            available=False,
            requirements=o.requirements,
        )
        if out
        else o
        for o, out in zip(instance_type.offerings, gone, strict=True)
    ]
    return InstanceType(
        name=name,
        capacity=instance_type.capacity,
        offerings=offerings,
        requirements=instance_type.requirements,
        overhead=instance_type.overhead,
    )


def with_reservations(
    types: Sequence[InstanceType],
    reservations: Sequence[CapacityReservationStatus],
    *,
    available: Callable[[str], int],
    bootable: Callable[[str], bool],
    offered_zones: Callable[[str], Collection[str]],
    pricing: PricingProvider,
    zone_ids: Mapping[str, str],
    subnet_zones: Collection[str],
) -> list[InstanceType]:
    """`types` with one `reserved` offering per capacity reservation of their type, as
    Karpenter offers them: in the reservation's zone, labelled with its id, type and whether it
    is interruptible, priced at the on-demand price / 10,000,000, and available while the
    reservation has instances left, is not expiring, and the class has a subnet in its zone
    where the type is sold (a type no other offering makes launchable stays unavailable)."""
    by_type: dict[str, list[CapacityReservationStatus]] = {}
    for r in reservations:
        by_type.setdefault(r.instance_type, []).append(r)
    if not by_type:
        return list(types)
    out: list[InstanceType] = []
    for it in types:
        mine = by_type.get(it.name)
        if not mine:
            out.append(it)
            continue
        sold = offered_zones(it.name)
        launchable = bootable(it.name)
        extra: list[Offering] = []
        for r in mine:
            zone = r.availability_zone
            reqs = [
                Requirement(LABEL_CAPACITY_RESERVATION_ID, complement=False, values=(r.id,)),
                Requirement(
                    LABEL_CAPACITY_RESERVATION_TYPE,
                    complement=False,
                    values=(r.reservation_type or "default",),
                ),
                Requirement(
                    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
                    complement=False,
                    values=(str(bool(r.interruptible)).lower(),),
                ),
            ]
            if zone in zone_ids:
                reqs.append(
                    Requirement(LABEL_TOPOLOGY_ZONE_ID, complement=False, values=(zone_ids[zone],))
                )
            price = pricing.on_demand_price(it.name)
            extra.append(
                Offering(
                    zone=zone,
                    capacity_type=CAPACITY_TYPE_RESERVED,
                    price=0.0 if price is None else price / RESERVED_PRICE_DIVISOR,
                    available=(
                        launchable
                        and zone in sold
                        and zone in subnet_zones
                        and r.state != "expiring"
                        and available(r.id) > 0
                    ),
                    requirements=Requirements(reqs),
                )
            )
        out.append(
            InstanceType(
                name=it.name,
                capacity=it.capacity,
                offerings=[*it.offerings, *extra],
                # The constructor derives these three from the offerings again.
                requirements=it.requirements.without(
                    LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE
                ),
                overhead=it.overhead,
            )
        )
    return out


def with_partitions(types: Sequence[InstanceType], partitions: int) -> list[InstanceType]:
    """`types` with each offering offered once per partition of a partition placement group,
    labelled `karpenter.k8s.aws/placement-group-partition` (1..`partitions`), so pods can spread
    over partitions (Karpenter's rule). CPU work: callers run it off the event loop."""
    labels = [
        Requirements(
            [Requirement(LABEL_PLACEMENT_GROUP_PARTITION, complement=False, values=(str(n),))]
        )
        for n in range(1, partitions + 1)
    ]
    out: list[InstanceType] = []
    for it in types:
        offerings = [
            Offering(
                zone=o.zone,
                capacity_type=o.capacity_type,
                price=o.price,
                available=o.available,
                requirements=o.requirements.union(partition),
            )
            for o in it.offerings
            for partition in labels
        ]
        out.append(
            InstanceType(
                name=it.name,
                capacity=it.capacity,
                offerings=offerings,
                requirements=it.requirements.without(
                    LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE
                ),
                overhead=it.overhead,
            )
        )
    return out


def usable(info: Mapping[str, Any]) -> bool:
    """HVM and an architecture Kubernetes nodes run (x86_64 or arm64)."""
    hvm = "hvm" in (info.get("SupportedVirtualizationTypes") or ())
    return hvm and architecture(info) is not None


@lru_cache(maxsize=256)
def _zone_id_requirements(zone_id: str) -> Requirements:
    return Requirements([Requirement(LABEL_TOPOLOGY_ZONE_ID, complement=False, values=(zone_id,))])


class InstanceTypeProvider:
    """Caches the region's instance types and offerings; builds `InstanceType`s from them."""

    def __init__(
        self,
        clients: AWSClients,
        pricing: PricingProvider,
        unavailable: UnavailableOfferings,
        *,
        refresh: timedelta = INSTANCE_TYPES_REFRESH,
        clock: Callable[[], float] = time.monotonic,
        vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
        reserved_enis: int = 0,
        reservations: CapacityReservations | None = None,
        placement_groups: PlacementGroups | None = None,
    ) -> None:
        self._clients = clients
        self.placement_groups = placement_groups
        """Where a class's placement group is found (its partitions become offerings)."""
        self._partitioned: OrderedDict[
            tuple[object, ...], tuple[list[InstanceType], list[InstanceType]]
        ] = OrderedDict()
        self.reservations = reservations
        """Where the instances left in each capacity reservation are counted; None: no reserved
        offerings (the `ReservedCapacity` gate is off)."""
        self._reserved: OrderedDict[
            tuple[object, ...], tuple[list[InstanceType], list[InstanceType]]
        ] = OrderedDict()
        self.vm_memory_overhead_percent = vm_memory_overhead_percent
        self.reserved_enis = reserved_enis
        self.pricing = pricing
        self.unavailable = unavailable
        self._refresh = refresh.total_seconds()
        self._clock = clock
        self._refreshed_at: float | None = None
        self.infos: dict[str, Mapping[str, Any]] = {}
        self.offered_zones: dict[str, set[str]] = {}
        self.zone_ids: dict[str, str] = {}
        self._cache: dict[tuple[object, ...], list[InstanceType]] = {}
        self._built: OrderedDict[tuple[object, ...], list[InstanceType]] = OrderedDict()
        self._version = 0
        self._refresh_lock = asyncio.Lock()
        self._build_lock = asyncio.Lock()

    @property
    def zones(self) -> list[str]:
        """Every zone that sells at least one instance type."""
        return sorted({z for zones in self.offered_zones.values() for z in zones})

    def stale(self) -> bool:
        return self._refreshed_at is None or self._clock() - self._refreshed_at >= self._refresh

    async def refresh(self, *, force: bool = False, spot_prices: bool = True) -> bool:
        """Re-read types, offerings, zone ids and (unless told not to) spot prices when 12h
        old or `force`; returns whether it did."""
        if not force and not self.stale():
            return False
        async with self._refresh_lock:
            # Callers that queued behind a refresh use its result instead of repeating it.
            if not force and not self.stale():
                return False
            await self.update_instance_types()
            await self.update_offerings()
            if spot_prices:
                await self.pricing.update_spot_prices()
            self._refreshed_at = self._clock()
            self._version += 1
            self._cache.clear()
            self._built.clear()
        return True

    async def prices_changed(self) -> None:
        """Forget the instance types built with the old prices (on-demand prices refreshed)."""
        async with self._refresh_lock:
            self._version += 1
            self._cache.clear()
            self._built.clear()

    async def update_instance_types(self) -> None:
        infos: dict[str, Mapping[str, Any]] = {}
        async with self._clients.client("ec2") as ec2:
            paginator = ec2.get_paginator("describe_instance_types")
            # Karpenter filters on hvm and x86_64/arm64 server-side. The same test is applied
            # here instead: EC2 matches a list filter when any value matches, but moto wants
            # the type's whole list covered, and so drops t2.* (i386 + x86_64) and the like.
            pages = paginator.paginate(PaginationConfig={"PageSize": 100})
            async for page in pages:
                for info in page.get("InstanceTypes") or ():
                    if usable(info):
                        infos[str(info["InstanceType"])] = info
        self.infos = infos

    async def update_offerings(self) -> None:
        offered: dict[str, set[str]] = {}
        async with self._clients.client("ec2") as ec2:
            paginator = ec2.get_paginator("describe_instance_type_offerings")
            pages = paginator.paginate(
                LocationType="availability-zone", PaginationConfig={"PageSize": 1000}
            )
            async for page in pages:
                for item in page.get("InstanceTypeOfferings") or ():
                    offered.setdefault(str(item["InstanceType"]), set()).add(str(item["Location"]))
            zones = await ec2.describe_availability_zones()
        self.offered_zones = offered
        self.zone_ids = {
            str(z["ZoneName"]): str(z["ZoneId"])
            for z in zones.get("AvailabilityZones") or ()
            if z.get("ZoneName") and z.get("ZoneId")
        }

    async def for_nodeclass(self, nodeclass: EC2NodeClass) -> list[InstanceType]:
        """The types a NodePool on `nodeclass` may use: its kubelet, AMI family and root volume
        shape capacity, and only the zones of its resolved subnets have available offerings.
        With capacity reservations in its status, their types also get `reserved` offerings
        (`with_reservations`); with a partition placement group, every offering is offered in
        each partition (`with_partitions`)."""
        settings = capacity_settings_for(
            nodeclass.spec,
            vm_memory_overhead_percent=self.vm_memory_overhead_percent,
            reserved_enis=self.reserved_enis,
        )
        subnets = (nodeclass.status.subnets if nodeclass.status else None) or ()
        zones = {s.zone for s in subnets}
        types = await self.list(settings, zones=zones)
        types = self._with_reservations(nodeclass, types, settings, zones)
        selector = nodeclass.spec.placement_group_selector
        if selector is None or self.placement_groups is None:
            return types
        try:
            group = await self.placement_groups.get(selector)
        except ClientError:
            return types  # the class is not Ready then: nothing launches with it
        if group is None or group.strategy != "partition" or not group.partition_count:
            return types
        key = (id(types), group.id, group.partition_count)
        cached = self._partitioned.get(key)
        if cached is not None and cached[0] is types:
            return cached[1]
        partitioned = await run_off_loop(with_partitions, types, group.partition_count)
        self._partitioned[key] = (types, partitioned)
        while len(self._partitioned) > RESERVED_KEPT:
            self._partitioned.popitem(last=False)
        return partitioned

    def _with_reservations(
        self,
        nodeclass: EC2NodeClass,
        types: builtins.list[InstanceType],
        settings: CapacitySettings,
        zones: set[str],
    ) -> builtins.list[InstanceType]:
        reservations = (nodeclass.status.capacity_reservations if nodeclass.status else None) or []
        if self.reservations is None or not reservations:
            return types
        counts = tuple((r.id, self.reservations.available(r.id)) for r in reservations)
        key = (id(types), nodeclass.name, repr(reservations), counts, frozenset(zones))
        cached = self._reserved.get(key)
        if cached is not None and cached[0] is types:
            return cached[1]
        family = settings.ami_family
        reserved = with_reservations(
            types,
            reservations,
            available=self.reservations.available,
            bootable=lambda name: (
                name in self.infos
                and compatible(
                    self.infos[name],
                    family,
                    network_interfaces=settings.network_interfaces,
                    connection_tracking=settings.connection_tracking,
                )
            ),
            offered_zones=lambda name: self.offered_zones.get(name, ()),
            pricing=self.pricing,
            zone_ids=self.zone_ids,
            subnet_zones=zones,
        )
        # The same inputs give the same list object, so launches share their candidates; a
        # few classes' lists are kept (each entry keeps its base list alive, so ids stay true).
        self._reserved[key] = (types, reserved)
        while len(self._reserved) > RESERVED_KEPT:
            self._reserved.popitem(last=False)
        return reserved
        return reserved

    async def list(
        self,
        settings: CapacitySettings | None = None,
        *,
        zones: Collection[str] | None = None,
    ) -> list[InstanceType]:
        """Every known type with offerings in every zone; `zones` (the NodeClass's subnet zones)
        limits which offerings are available. Refreshes first when the lists are stale."""
        await self.refresh()
        settings = settings or CapacitySettings(
            vm_memory_overhead_percent=self.vm_memory_overhead_percent,
            reserved_enis=self.reserved_enis,
        )
        allowed = frozenset(zones) if zones is not None else None
        built_key = (repr(settings), allowed, self._version)
        key = (*built_key, self.unavailable.active())
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        built = self._built.get(built_key)
        if built is None:
            built = await self._build(built_key, settings, allowed)
        types = [without_unavailable(t, self.unavailable) for t in built]
        self._cache = {key: types}
        return types

    async def _build(
        self,
        key: tuple[object, ...],
        settings: CapacitySettings,
        allowed: frozenset[str] | None,
    ) -> builtins.list[InstanceType]:
        """Every type for `settings` and `allowed` zones, built in a worker thread (one build
        at a time: concurrent callers for the same key wait for it). The ICE cache is laid over
        the result by the caller, since it changes far more often (every spot interruption)."""
        async with self._build_lock:
            built = self._built.get(key)
            if built is not None:
                self._built.move_to_end(key)
                return built
            version = self._version
            built = await run_off_loop(
                build_instance_types,
                dict(self.infos),
                self.offered_zones,
                self.zone_ids,
                self.pricing,
                settings,
                allowed,
            )
            if version == self._version:
                self._built[key] = built
                while len(self._built) > BUILT_KEPT:
                    self._built.popitem(last=False)
            return built


def build_instance_types(
    infos: Mapping[str, Mapping[str, Any]],
    offered_zones: Mapping[str, Collection[str]],
    zone_ids: Mapping[str, str],
    pricing: PricingProvider,
    settings: CapacitySettings,
    allowed_zones: Collection[str] | None,
) -> list[InstanceType]:
    """Every type in `infos`, sorted by name, with offerings in every zone that sells any."""
    all_zones = sorted({z for zones in offered_zones.values() for z in zones})
    return [
        build_instance_type(
            info,
            zones=all_zones,
            offered_zones=offered_zones.get(name, ()),
            pricing=pricing,
            settings=settings,
            zone_ids=zone_ids,
            allowed_zones=allowed_zones,
        )
        for name, info in sorted(infos.items())
    ]
