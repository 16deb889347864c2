"""Retail prices fetched page by page from the fake ARM's Retail Prices endpoint."""

from __future__ import annotations

import aiohttp

from karpy.cloudprovider.azure.pricing import fetch_prices
from tests.integration.azure.fakearm import FakeArm


async def test_every_page_is_read(arm: FakeArm) -> None:
    # Test prices, not Azure's.
    arm.state.prices = [
        {
            "armRegionName": region,
            "armSkuName": f"Standard_D{n}s_v5",
            "skuName": f"D{n}s v5",
            "productName": "Virtual Machines Dsv5 Series",
            "retailPrice": n / 10,
            "unitOfMeasure": "1 Hour",
            "type": "Consumption",
        }
        for region in ("westus2", "eastus")
        for n in (2, 4, 8, 16, 32)
    ]
    arm.state.price_page_size = 2
    async with aiohttp.ClientSession() as session:
        table = await fetch_prices(session, region="westus2", endpoint=arm.url, ssl=False)
    assert table == {(f"Standard_D{n}s_v5", "on-demand"): n / 10 for n in (2, 4, 8, 16, 32)}
    assert arm.state.calls[("GET", "prices")] == 3
