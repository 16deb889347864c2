"""The CreateFleet request for one NodeClaim and the reading of its answer (reference §3.2-3.3).

Pure functions, no I/O: which capacity type to ask for (reserved when the claim allows it and
a capacity reservation has room, else spot when allowed and available, else on-demand, as
Karpenter chooses), which instance types (the 60 cheapest that still
meet every minValues), one subnet per zone, the overrides (every available offering of those
types in those zones, cheapest first), and a `ClientToken` derived from the NodeClaim so EC2
answers a retried request with the first request's instances.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import SubnetStatus
from karpy.apis.aws.v1.labels import LABEL_CAPACITY_RESERVATION_ID
from karpy.apis.v1.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import fits

__all__ = [
    "MAX_INSTANCE_TYPES",
    "Candidates",
    "FleetInstance",
    "LaunchGroup",
    "MinValuesError",
    "candidates",
    "capacity_type_for",
    "client_token",
    "fleet_request",
    "offerings_for",
    "overrides",
    "parse_fleet_response",
    "price_overlaid",
    "reservation_of",
    "truncate",
    "zonal_subnets",
]

MAX_INSTANCE_TYPES: Final = 60
SPOT_ALLOCATION: Final = "price-capacity-optimized"
ON_DEMAND_ALLOCATION: Final = "lowest-price"
SPOT_ALLOCATION_PRIORITIZED: Final = "capacity-optimized-prioritized"
ON_DEMAND_ALLOCATION_PRIORITIZED: Final = "prioritized"


def client_token(name: str, uid: str | None) -> str:
    """The CreateFleet idempotency token of a NodeClaim (≤64 ASCII characters): the same
    NodeClaim always sends the same token, a new NodeClaim of the same name a different one."""
    digest = hashlib.sha256(f"{name}/{uid or ''}".encode()).hexdigest()
    return f"karpy-{digest[:48]}"


def offerings_for(it: InstanceType, reqs: Requirements, capacity_type: str) -> list[Offering]:
    """The type's available offerings of `capacity_type` that `reqs` allow."""
    return [
        o
        for o in it.offerings
        if o.available and o.capacity_type == capacity_type and o.compatible(reqs)
    ]


def reservation_of(offering: Offering) -> str | None:
    """The capacity reservation a reserved offering launches into, else None."""
    req = offering.requirements.get(LABEL_CAPACITY_RESERVATION_ID)
    if req is None or req.complement or len(req.values) != 1:
        return None
    return next(iter(req.values))


def capacity_type_for(reqs: Requirements, types: Sequence[InstanceType]) -> str | None:
    """Reserved when allowed and some type has an available reserved offering (a capacity
    reservation with room), else spot, else on-demand, each when allowed and available, else
    None (Karpenter's order)."""
    for capacity_type in (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND):
        if any(offerings_for(it, reqs, capacity_type) for it in types):
            return capacity_type
    return None


class MinValuesError(ValueError):
    """The launchable types cannot meet a requirement's minValues within the type limit."""


def truncate(
    types: Sequence[InstanceType],
    reqs: Requirements,
    capacity_type: str,
    limit: int = MAX_INSTANCE_TYPES,
) -> list[InstanceType]:
    """The `limit` cheapest types with an available offering of `capacity_type` (ties by name),
    cheapest first. When the cheapest `limit` do not meet a requirement's minValues, the
    cheapest type bringing each missing value is kept first and the rest filled by price, as
    Karpenter truncates; `MinValuesError` when even that cannot meet them."""
    priced = []
    for it in types:
        offers = offerings_for(it, reqs, capacity_type)
        if offers:
            priced.append((min(o.price for o in offers), it.name, it))
    priced.sort(key=lambda item: (item[0], item[1]))
    ordered = [it for _, _, it in priced]
    chosen = ordered[:limit]
    if _shortfall(reqs, chosen) is None:
        return chosen
    kept = _min_values_cover(reqs, ordered)
    names = {it.name for it in kept}
    chosen = [*kept, *(it for it in ordered if it.name not in names)][:limit]
    short = _shortfall(reqs, chosen)
    if short is not None:
        key, found, wanted = short
        raise MinValuesError(
            f'minValues of "{key}" needs {wanted} values, but the {len(ordered)} launchable '
            f"{capacity_type} instance types truncated to {limit} offer {found}"
        )
    rank = {it.name: i for i, it in enumerate(ordered)}
    return sorted(chosen, key=lambda it: rank[it.name])


def _min_values_cover(reqs: Requirements, ordered: Sequence[InstanceType]) -> list[InstanceType]:
    """Cheapest-first, the types that each bring a value a minValues requirement still lacks."""
    kept: list[InstanceType] = []
    for key, req in reqs.items():
        if req.min_values is None:
            continue
        seen = {v for it in kept for v in _values_of(it, key, reqs)}
        for it in ordered:
            if len(seen) >= req.min_values:
                break
            new = _values_of(it, key, reqs) - seen
            if new:
                seen |= new
                if it not in kept:
                    kept.append(it)
    return kept


def _shortfall(reqs: Requirements, types: Sequence[InstanceType]) -> tuple[str, int, int] | None:
    """The first requirement whose minValues `types` miss: (key, values found, wanted)."""
    for key, req in reqs.items():
        if req.min_values is None:
            continue
        found = {v for it in types for v in _values_of(it, key, reqs)}
        if len(found) < req.min_values:
            return key, len(found), req.min_values
    return None


def _values_of(it: InstanceType, key: str, reqs: Requirements) -> set[str]:
    offered = it.requirements.get(key)
    wanted = reqs.get(key)
    if offered is None or offered.complement or wanted is None:
        return set()
    return {v for v in offered.values if wanted.has(v)}


def allows(type_reqs: Requirements, reqs: Requirements) -> bool:
    """Every key both constrain has a common value (`Requirements.intersects` without
    building the reason, which costs more than the check)."""
    for key, wanted in reqs.items():
        offered = type_reqs.get(key)
        if offered is not None and not offered.intersects(wanted):
            return False
    return True


@dataclass(frozen=True)
class Candidates:
    """What a NodeClaim may launch: how many types fit, the capacity type, the cheapest types."""

    compatible: int
    capacity_type: str | None
    chosen: tuple[InstanceType, ...]


def candidates(
    types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> Candidates:
    """The types `reqs` allow whose allocatable holds `requests`, the capacity type to ask for,
    and the `MAX_INSTANCE_TYPES` cheapest of them. Pure and CPU-heavy (the whole catalogue):
    callers run it off the event loop."""
    compatible = [
        it for it in types if allows(it.requirements, reqs) and fits(requests, it.allocatable)
    ]
    capacity_type = capacity_type_for(reqs, compatible)
    chosen = () if capacity_type is None else tuple(truncate(compatible, reqs, capacity_type))
    return Candidates(len(compatible), capacity_type, chosen)


def price_overlaid(types: Sequence[InstanceType]) -> bool:
    """Whether a NodeOverlay set the price of any of `types`' offerings: EC2 does not know
    that price, so the fleet must be told the order with priorities (Karpenter's rule)."""
    return any(it.price_overlaid for it in types)


def zonal_subnets(subnets: Sequence[SubnetStatus]) -> dict[str, SubnetStatus]:
    """One subnet per zone: the first listed (status lists most available IPs first)."""
    out: dict[str, SubnetStatus] = {}
    for subnet in subnets:
        out.setdefault(subnet.zone, subnet)
    return out


@dataclass(frozen=True)
class LaunchGroup:
    """Instance types launched with one launch template."""

    template: str
    image_id: str
    types: Sequence[InstanceType]
    reservation: str | None = None
    """The capacity reservation the template targets: only its offerings are overridden."""


def overrides(
    groups: Sequence[LaunchGroup],
    reqs: Requirements,
    capacity_type: str,
    subnets: Mapping[str, SubnetStatus],
    *,
    prioritized: bool = False,
) -> list[dict[str, Any]]:
    """`LaunchTemplateConfigs`: per template, one override per (type, zone with a subnet),
    cheapest first; templates ordered by their cheapest override. `prioritized` gives each
    override `Priority` = its offering's price (as the NodeOverlays set it; EC2 launches the
    lowest number first), as Karpenter does for its prioritized allocation strategies."""
    configs: list[tuple[float, dict[str, Any]]] = []
    for group in groups:
        entries: list[tuple[float, str, str, dict[str, Any]]] = []
        seen: set[tuple[str, str]] = set()
        for it in group.types:
            for o in offerings_for(it, reqs, capacity_type):
                if group.reservation is not None and reservation_of(o) != group.reservation:
                    continue
                subnet = subnets.get(o.zone)
                if subnet is None or (it.name, o.zone) in seen:
                    continue
                seen.add((it.name, o.zone))
                override: dict[str, Any] = {
                    "InstanceType": it.name,
                    "SubnetId": subnet.id,
                    "AvailabilityZone": o.zone,
                    "ImageId": group.image_id,
                }
                if prioritized:
                    override["Priority"] = o.price
                entries.append((o.price, it.name, o.zone, override))
        if not entries:
            continue
        entries.sort(key=lambda e: (e[0], e[1], e[2]))
        configs.append(
            (
                entries[0][0],
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateName": group.template,
                        "Version": "$Latest",
                    },
                    "Overrides": [e[3] for e in entries],
                },
            )
        )
    configs.sort(key=lambda c: c[0])
    return [c for _, c in configs]


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def fleet_request(
    configs: Sequence[Mapping[str, Any]],
    capacity_type: str,
    tags: Mapping[str, str],
    *,
    token: str,
    context: str | None = None,
    prioritized: bool = False,
    reservation_type: str | None = None,
    interruptible: bool = False,
) -> dict[str, Any]:
    """An `instant` CreateFleet for one instance, tagging the instance, its volumes and the
    fleet (network interfaces get the launch tags from the launch template, as Karpenter does:
    CreateFleet accepts only these resource types). `prioritized` (a NodeOverlay priced the
    candidates) asks EC2 to follow the overrides' priorities instead of its own prices.

    A `reserved` launch (its templates target the reservations) asks for `on-demand` capacity
    from an on-demand capacity reservation, `capacity-block` from a capacity block, and
    `reserved-capacity` from an interruptible reservation (Karpenter's mapping)."""
    target = capacity_type
    if capacity_type == CAPACITY_TYPE_RESERVED:
        if reservation_type == "capacity-block":
            target = "capacity-block"
        elif interruptible:
            target = "reserved-capacity"
        else:
            target = CAPACITY_TYPE_ON_DEMAND
    request: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": token,
        "LaunchTemplateConfigs": list(configs),
        "TargetCapacitySpecification": {
            "DefaultTargetCapacityType": target,
            "TotalTargetCapacity": 1,
        },
    }
    if tags:  # an empty tag list is a malformed request
        request["TagSpecifications"] = [
            {"ResourceType": kind, "Tags": _tag_list(tags)}
            for kind in ("instance", "volume", "fleet")
        ]
    if capacity_type == CAPACITY_TYPE_SPOT:
        spot = SPOT_ALLOCATION_PRIORITIZED if prioritized else SPOT_ALLOCATION
        request["SpotOptions"] = {"AllocationStrategy": spot}
    elif target == "reserved-capacity":
        request["ReservedCapacityOptions"] = {
            "ReservationTypes": ["interruptible-capacity-reservation"]
        }
    elif target != "capacity-block":
        on_demand = ON_DEMAND_ALLOCATION_PRIORITIZED if prioritized else ON_DEMAND_ALLOCATION
        request["OnDemandOptions"] = {"AllocationStrategy": on_demand}
    if context:
        request["Context"] = context
    return request


@dataclass(frozen=True)
class FleetInstance:
    """The instance a fleet launched, as its answer describes it."""

    instance_id: str
    instance_type: str
    zone: str | None
    subnet_id: str | None
    image_id: str | None
    capacity_type: str


def parse_fleet_response(
    response: Mapping[str, Any],
) -> tuple[FleetInstance | None, list[Mapping[str, Any]]]:
    """The first launched instance (if any) and the fleet's `Errors`."""
    errors = list(response.get("Errors") or ())
    for entry in response.get("Instances") or ():
        ids = entry.get("InstanceIds") or ()
        if not ids:
            continue
        override = (entry.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        lifecycle = str(entry.get("Lifecycle") or CAPACITY_TYPE_ON_DEMAND)
        return (
            FleetInstance(
                instance_id=str(ids[0]),
                instance_type=str(entry.get("InstanceType") or override.get("InstanceType")),
                zone=override.get("AvailabilityZone"),
                subnet_id=override.get("SubnetId"),
                image_id=override.get("ImageId"),
                capacity_type=(
                    CAPACITY_TYPE_SPOT
                    if lifecycle == CAPACITY_TYPE_SPOT
                    else CAPACITY_TYPE_ON_DEMAND
                ),
            ),
            errors,
        )
    return None, errors
