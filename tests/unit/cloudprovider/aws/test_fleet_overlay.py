"""CreateFleet under NodeOverlay prices: EC2 does not know an overlay's price, so a fleet whose
candidates an overlay priced asks for the prioritized strategies and orders the overrides by the
overlaid price (Karpenter's rule); without an overlay the request stays price-driven."""

from __future__ import annotations

from typing import Any

from karpy.apis.aws.v1.ec2nodeclass import SubnetStatus
from karpy.apis.v1.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT
from karpy.cloudprovider.aws.fleet import (
    LaunchGroup,
    fleet_request,
    overrides,
    price_overlaid,
    zonal_subnets,
)
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.overlays import Pool, apply_overlays, overlays_of
from karpy.scheduling.requirements import Requirements

ZONES = ("us-east-1a", "us-east-1b")
SUBNETS = zonal_subnets([SubnetStatus(id=f"subnet-{z[-1]}", zone=z) for z in ZONES])


def itype(name: str, price: float) -> InstanceType:
    return InstanceType(
        name=name,
        capacity={"cpu": 2000, "pods": 29},
        offerings=[
            Offering(zone=z, capacity_type=ct, price=price + i * 0.01)
            for i, z in enumerate(ZONES)
            for ct in (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT)
        ],
    )


def discounted(types: list[InstanceType], name: str, change: str) -> list[InstanceType]:
    """`types` through one NodeOverlay pricing instance type `name`."""
    overlay = {
        "metadata": {"name": "discount"},
        "spec": {
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [name]}
            ],
            "priceAdjustment": change,
        },
    }
    readable, invalid = overlays_of([overlay])
    assert invalid == {}
    return apply_overlays([Pool("default", {}, types)], readable).types["default"]


def request(types: list[InstanceType], capacity_type: str) -> dict[str, Any]:
    prioritized = price_overlaid(types)
    configs = overrides(
        [LaunchGroup("lt-1", "ami-1", types)],
        Requirements(),
        capacity_type,
        SUBNETS,
        prioritized=prioritized,
    )
    return fleet_request(configs, capacity_type, {}, token="t", prioritized=prioritized)


def test_an_overlay_price_asks_for_prioritized_strategies_in_overlaid_price_order() -> None:
    base = [itype("c5.large", 0.10), itype("m5.large", 0.20)]
    types = discounted(base, "m5.large", "-75%")  # m5.large now 0.05 (+0.01 in zone b)
    assert price_overlaid(types) and not price_overlaid(base)

    od = request(types, CAPACITY_TYPE_ON_DEMAND)
    assert od["OnDemandOptions"] == {"AllocationStrategy": "prioritized"}
    assert "SpotOptions" not in od
    entries = od["LaunchTemplateConfigs"][0]["Overrides"]
    assert [(o["InstanceType"], o["AvailabilityZone"]) for o in entries] == [
        ("m5.large", "us-east-1a"),
        ("m5.large", "us-east-1b"),
        ("c5.large", "us-east-1a"),
        ("c5.large", "us-east-1b"),
    ]
    priorities = [o["Priority"] for o in entries]
    assert priorities == sorted(priorities)  # EC2 launches the lowest number first
    assert priorities[0] == 0.05 and priorities[2] == 0.10

    spot = request(types, CAPACITY_TYPE_SPOT)
    assert spot["SpotOptions"] == {"AllocationStrategy": "capacity-optimized-prioritized"}
    assert all("Priority" in o for o in spot["LaunchTemplateConfigs"][0]["Overrides"])


def test_without_an_overlay_price_the_request_is_unchanged() -> None:
    base = [itype("c5.large", 0.10), itype("m5.large", 0.20)]
    od = request(base, CAPACITY_TYPE_ON_DEMAND)
    assert od["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    spot = request(base, CAPACITY_TYPE_SPOT)
    assert spot["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    for req in (od, spot):
        entries = req["LaunchTemplateConfigs"][0]["Overrides"]
        assert entries[0]["InstanceType"] == "c5.large"
        assert all("Priority" not in o for o in entries)
    # Equal to the builder called without the flag at all (today's request).
    configs = overrides(
        [LaunchGroup("lt-1", "ami-1", base)], Requirements(), CAPACITY_TYPE_ON_DEMAND, SUBNETS
    )
    assert od == fleet_request(configs, CAPACITY_TYPE_ON_DEMAND, {}, token="t")
