"""Prices: the shipped on-demand table, spot records (latest wins), the on-demand fallback."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.pricing import (
    PricingProvider,
    parse_price_list_item,
    pricing_endpoint_region,
    static_on_demand_prices,
)

REPO = Path(__file__).resolve().parents[4]


def test_shipped_table_has_us_east_1_prices_and_other_regions_fall_back_to_it() -> None:
    prices = static_on_demand_prices("us-east-1")
    assert prices["m5.large"] == 0.096
    assert prices["c6g.xlarge"] == 0.136
    assert static_on_demand_prices("eu-west-1") == prices


def test_shipped_table_is_what_the_hack_script_renders() -> None:
    """The generator is deterministic and its output parses back to the same prices."""
    import sys

    sys.path.insert(0, str(REPO / "hack" / "aws"))
    try:
        import on_demand_prices
    finally:
        sys.path.pop(0)
    source = {"generatedAt": "t", "regions": {"us-east-1": {"b.large": 2, "a.large": 1.5}}}
    text = on_demand_prices.render(source)
    assert json.loads(text) == {
        "generatedAt": "t",
        "regions": {"us-east-1": {"a.large": 1.5, "b.large": 2}},
    }
    shipped = REPO / "karpy/cloudprovider/aws/data/on-demand-prices.json"
    assert shipped.read_text() == on_demand_prices.render(json.loads(shipped.read_text()))


def test_latest_spot_record_wins_and_unknown_spot_is_on_demand_until_the_first_update() -> None:
    pricing = PricingProvider(AWSClients("us-east-1"))
    assert pricing.spot_price("m5.large", "us-east-1a") == 0.096  # before any spot data
    old = datetime(2026, 1, 1, tzinfo=UTC)
    new = datetime(2026, 1, 2, tzinfo=UTC)
    for when, price in ((new, "0.04"), (old, "0.05")):
        pricing._merge_spot(
            {
                "InstanceType": "m5.large",
                "AvailabilityZone": "us-east-1a",
                "SpotPrice": price,
                "Timestamp": when,
            }
        )
    assert pricing.spot_price("m5.large", "us-east-1a") == 0.04
    assert pricing.spot_price("m5.large", "us-east-1b") == 0.096
    assert pricing.spot_price("no-such.type", "us-east-1a") is None
    assert pricing.on_demand_price("no-such.type") is None
    # After a spot update has returned records (Karpenter's rule), no record means no price:
    # the spot offering is dropped rather than priced as on-demand.
    pricing.spot_updated = True
    assert pricing.spot_price("m5.large", "us-east-1a") == 0.04
    assert pricing.spot_price("m5.large", "us-east-1b") is None


def test_price_list_items_and_endpoints() -> None:
    item = {
        "product": {"attributes": {"instanceType": "m5.large"}},
        "terms": {
            "OnDemand": {
                "X.Y": {"priceDimensions": {"X.Y.Z": {"pricePerUnit": {"USD": "0.0960000000"}}}}
            }
        },
    }
    assert parse_price_list_item(json.dumps(item)) == ("m5.large", 0.096)
    assert parse_price_list_item({"product": {}}) is None
    assert pricing_endpoint_region("eu-west-1") == "eu-central-1"
    assert pricing_endpoint_region("ap-northeast-1") == "ap-south-1"
    assert pricing_endpoint_region("cn-north-1") == "cn-northwest-1"
    assert pricing_endpoint_region("us-west-2") == "us-east-1"
