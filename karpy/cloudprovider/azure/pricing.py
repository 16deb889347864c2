"""Azure VM prices from the Azure Retail Prices API (`GET https://prices.azure.com/api/retail/prices`,
no credentials), as a (SKU, capacity type) -> price-per-hour table for `instancetypes`.

A region's Linux pay-as-you-go prices are the items with `serviceName eq 'Virtual Machines'`
and `priceType eq 'Consumption'`, the `armRegionName`, and `unitOfMeasure` `1 Hour`; Windows
meters (`productName` ending in `Windows`) and retired Low Priority meters are left out; a meter
whose `skuName` ends in `Spot` is the spot price. Pages follow `NextPageLink`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import aiohttp

__all__ = ["DEFAULT_ENDPOINT", "fetch_prices", "parse_prices", "price_filter"]

DEFAULT_ENDPOINT: Final = "https://prices.azure.com"
_PATH: Final = "/api/retail/prices"
_MAX_PAGES: Final = 500


def price_filter(region: str) -> str:
    """The OData filter of a region's VM pay-as-you-go prices."""
    return (
        f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
        f"and armRegionName eq '{region.lower()}'"
    )


def parse_prices(items: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """The Linux on-demand and spot price per hour of each SKU among the price items."""
    out: dict[tuple[str, str], float] = {}
    for item in items:
        if item.get("type", "Consumption") != "Consumption":
            continue
        if item.get("unitOfMeasure", "1 Hour") != "1 Hour":
            continue
        product = str(item.get("productName", ""))
        meter = str(item.get("skuName", ""))
        sku = str(item.get("armSkuName", ""))
        if not sku or product.endswith("Windows") or meter.endswith("Low Priority"):
            continue
        capacity_type = "spot" if meter.endswith("Spot") else "on-demand"
        price = float(item.get("retailPrice", item.get("unitPrice", 0.0)))
        key = (sku, capacity_type)
        # Several meters can price one SKU (promotions, zonal meters): the cheapest is offered.
        if price > 0 and (key not in out or price < out[key]):
            out[key] = price
    return out


async def fetch_prices(
    session: aiohttp.ClientSession,
    *,
    region: str,
    endpoint: str = DEFAULT_ENDPOINT,
    page_timeout: float = 30.0,
    ssl: Any = None,
) -> dict[tuple[str, str], float]:
    """Every page of a region's prices, parsed; raises `aiohttp.ClientError` on failure."""
    items: list[Mapping[str, Any]] = []
    url: str | None = f"{endpoint.rstrip('/')}{_PATH}"
    params: dict[str, str] | None = {"$filter": price_filter(region)}
    for _ in range(_MAX_PAGES):
        if url is None:
            break
        async with session.get(
            url, params=params, timeout=aiohttp.ClientTimeout(total=page_timeout), ssl=ssl
        ) as response:
            response.raise_for_status()
            page = await response.json()
        items.extend(page.get("Items") or ())
        url, params = page.get("NextPageLink"), None
    return parse_prices(items)
