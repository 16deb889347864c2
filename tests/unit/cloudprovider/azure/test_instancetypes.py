"""Azure SKUs as instance types: allocatable, labels as requirements, offerings per zone and
capacity type, restricted zones and locations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from karpy.apis.azure.v1beta1 import labels
from karpy.cloudprovider.azure.instancetypes import NO_PRICE, instance_type, zone_label
from karpy.cloudprovider.azure.skus import parse_sku
from karpy.scheduling.requirements import Requirements

RECORDS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "westcentralus-skus.json").read_text()
)["value"]
# Test prices, not Azure's.
PRICES = {("Standard_D2s_v3", "on-demand"): 0.096, ("Standard_D2s_v3", "spot"): 0.02}


def _record(name: str, **changes: Any) -> dict[str, Any]:
    (record,) = [r for r in RECORDS if r["name"] == name]
    out = dict(record, **changes)
    return out


def _zonal(name: str, zones: list[str], *, spot: bool = True, **changes: Any) -> dict[str, Any]:
    record = _record(name, locationInfo=[{"location": "westus2", "zones": zones}], **changes)
    record["capabilities"] = [
        *record["capabilities"],
        {"name": "LowPriorityCapable", "value": str(spot)},
    ]
    return record


def test_allocatable_and_labels() -> None:
    sku = parse_sku(_zonal("Standard_D2s_v3", ["1", "2", "3"]), location="westus2")
    assert sku is not None
    it = instance_type(sku, region="westus2", prices=PRICES, pods=30)
    assert it is not None
    assert it.allocatable["cpu"] == 1900
    assert it.allocatable["memory"] == 5_226_731_929
    assert it.allocatable["pods"] == 30
    assert it.requirements.labels()[labels.LABEL_SKU_FAMILY] == "D"
    wanted = Requirements.from_labels(
        {labels.LABEL_SKU_SERIES: "Ds_v3", "kubernetes.io/arch": "amd64"}
    )
    assert it.requirements.intersects(wanted) is None


def test_offerings_per_zone_and_capacity_type() -> None:
    record = _zonal(
        "Standard_D2s_v3",
        ["1", "2", "3"],
        restrictions=[{"type": "Zone", "values": ["westus2"], "restrictionInfo": {"zones": ["3"]}}],
    )
    sku = parse_sku(record, location="westus2")
    assert sku is not None
    it = instance_type(sku, region="westus2", prices=PRICES, pods=110)
    assert it is not None
    seen = {(o.zone, o.capacity_type): (o.price, o.available) for o in it.offerings}
    assert seen[("westus2-1", "spot")] == (0.02, True)
    assert seen[("westus2-2", "on-demand")] == (0.096, True)
    assert seen[("westus2-3", "on-demand")] == (0.096, False)
    assert len(seen) == 6
    cheapest = it.cheapest_offering()
    assert cheapest is not None and cheapest.capacity_type == "spot"


def test_no_spot_where_not_low_priority_capable_and_unpriced_never_cheapest() -> None:
    sku = parse_sku(_zonal("Standard_F16s_v2", ["1"], spot=False), location="westus2")
    assert sku is not None
    it = instance_type(sku, region="westus2", prices=PRICES, pods=110)
    assert it is not None
    assert [(o.zone, o.capacity_type, o.price) for o in it.offerings] == [
        ("westus2-1", "on-demand", NO_PRICE)
    ]


def test_regional_sku_is_offered_once_with_regional_scope() -> None:
    sku = parse_sku(_record("Standard_D4s_v3"), location="westcentralus")
    assert sku is not None
    it = instance_type(sku, region="westcentralus", prices={}, pods=110)
    assert it is not None
    assert {o.zone for o in it.offerings} == {""}
    assert it.requirements.labels()[labels.LABEL_PLACEMENT_SCOPE] == "regional"


def test_restricted_location_and_sub_gib_skus_are_not_offered() -> None:
    restricted = _record(
        "Standard_D2s_v3",
        restrictions=[
            {
                "type": "Location",
                "values": ["westcentralus"],
                "restrictionInfo": {"locations": ["westcentralus"]},
            }
        ],
    )
    sku = parse_sku(restricted, location="westcentralus")
    assert sku is not None
    assert instance_type(sku, region="westcentralus", prices={}, pods=110) is None
    a0 = parse_sku(_record("Standard_A0"), location="westcentralus")
    assert a0 is not None
    assert instance_type(a0, region="westcentralus", prices={}, pods=110) is None


def test_zone_label() -> None:
    assert zone_label("WestUS2", "1") == "westus2-1"
    assert zone_label("westus2", "") == ""
