"""On-demand prices refreshed from the Price List API in `karpy run`. moto has no Pricing API,
so GetProducts is answered at botocore's seam (`Stubber`) with responses shaped as the API
reference's (PriceList: JSON strings of products with OnDemand terms); EC2 is the moto server.
New prices reach the instance types built after the refresh; a failure or an empty answer
keeps the shipped table and logs that it is used, naming the region whose prices stand in."""

from __future__ import annotations

import json
from typing import Any

import structlog
from botocore.stub import Stubber  # type: ignore[import-untyped]

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.pricerefresh import OnDemandPriceRefresher
from karpy.cloudprovider.aws.pricing import PricingProvider, static_on_demand_prices
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from tests.integration.aws.conftest import REGION


def product(instance_type: str, usd: str) -> str:
    """One Price List item as GetProducts returns it (a JSON document in a string)."""
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {"instanceType": instance_type, "regionCode": REGION},
                "sku": f"SKU{instance_type}",
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"SKU{instance_type}.JRTCKXETXF": {
                        "priceDimensions": {
                            f"SKU{instance_type}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": f"SKU{instance_type}",
                    }
                }
            },
        }
    )


class PricingStub:
    """Answers the pricing client's calls from a queue of responses or errors."""

    def __init__(self) -> None:
        self.stubber: Stubber | None = None
        self.queued: list[tuple[str, Any]] = []

    def hook(self, service: str, client: Any) -> None:
        if service != "pricing":
            return
        self.stubber = Stubber(client)
        for kind, value in self.queued:
            if kind == "ok":
                self.stubber.add_response("get_products", value)
            else:
                self.stubber.add_client_error("get_products", service_error_code=value)
        self.stubber.activate()


def page(*items: str) -> dict[str, Any]:
    return {"FormatVersion": "aws_v1", "PriceList": list(items)}


async def on_demand_price(provider: InstanceTypeProvider, name: str) -> float:
    for it in await provider.list():
        if it.name == name:
            return min(o.price for o in it.offerings if o.capacity_type == "on-demand")
    raise AssertionError(f"{name} not listed")


async def test_refreshed_prices_reach_the_instance_types(moto_endpoint: str) -> None:
    stub = PricingStub()
    # Shared tenancy, then bare metal: the two product families karpy asks for.
    stub.queued = [("ok", page(product("m5.large", "0.5"))), ("ok", page(product("m5.metal", "9")))]
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=stub.hook)
    pricing = PricingProvider(clients)
    provider = InstanceTypeProvider(clients, pricing, UnavailableOfferings())
    await provider.refresh()
    shipped = static_on_demand_prices(REGION)["m5.large"]
    assert await on_demand_price(provider, "m5.large") == shipped != 0.5

    with structlog.testing.capture_logs() as logs:
        assert await OnDemandPriceRefresher(pricing=pricing, instance_types=provider).refresh_once()
    assert await on_demand_price(provider, "m5.large") == 0.5
    assert pricing.on_demand_price("m5.metal") == 9.0
    assert next(e for e in logs if e["event"] == "refreshed on-demand prices")["count"] == 2
    assert stub.stubber is not None
    stub.stubber.assert_no_pending_responses()


async def test_a_failed_refresh_keeps_the_shipped_table_and_says_so(moto_endpoint: str) -> None:
    stub = PricingStub()
    stub.queued = [("error", "AccessDeniedException")]
    clients = AWSClients("eu-west-1", endpoint_url=moto_endpoint, on_client=stub.hook)
    pricing = PricingProvider(clients)
    provider = InstanceTypeProvider(clients, pricing, UnavailableOfferings())
    before = pricing.on_demand_price("m5.large")
    with structlog.testing.capture_logs() as logs:
        refreshed = await OnDemandPriceRefresher(
            pricing=pricing, instance_types=provider
        ).refresh_once()
    assert not refreshed
    assert pricing.on_demand_price("m5.large") == before
    (fallback,) = [e for e in logs if e["event"] == "using the shipped on-demand price table"]
    assert fallback["region"] == "eu-west-1" and fallback["table-region"] == "us-east-1"
    assert "AccessDeniedException" in fallback["reason"]


async def test_an_empty_answer_is_a_fallback_too(moto_endpoint: str) -> None:
    stub = PricingStub()
    stub.queued = [("ok", page()), ("ok", page())]
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=stub.hook)
    pricing = PricingProvider(clients)
    provider = InstanceTypeProvider(clients, pricing, UnavailableOfferings())
    with structlog.testing.capture_logs() as logs:
        refreshed = await OnDemandPriceRefresher(
            pricing=pricing, instance_types=provider
        ).refresh_once()
    assert not refreshed
    assert [e["table-region"] for e in logs if "shipped" in e["event"]] == [REGION]
