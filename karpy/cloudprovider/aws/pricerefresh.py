"""On-demand prices from the AWS Price List API, refreshed every 12 hours in `karpy run`
(Karpenter's pricing controller; spot prices are refreshed with the instance types).

Until the API has answered, and whenever it fails, prices come from the table shipped with
karpy, and a log line says so, naming the table's date and, for a region the table lacks, the
region whose prices stand in. A failure is tried again after `RETRY_AFTER`. Runs in the
background on every replica, so a slow or unreachable API never holds up a launch; new prices
reach the instance types built after the refresh.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

import structlog

from karpy.cloudprovider.aws.errors import BotoCoreError, ClientError, error_code, error_message
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.pricing import (
    DEFAULT_PRICE_REGION,
    PricingProvider,
    static_on_demand_regions,
    static_prices_date,
)

__all__ = ["PRICE_REFRESH", "RETRY_AFTER", "OnDemandPriceRefresher"]

PRICE_REFRESH: Final = 12 * 3600.0
RETRY_AFTER: Final = 300.0

log = structlog.get_logger("karpy.cloudprovider.aws.pricing")


class OnDemandPriceRefresher:
    """A runnable: refresh on-demand prices now, then every `period` seconds."""

    def __init__(
        self,
        *,
        pricing: PricingProvider,
        instance_types: InstanceTypeProvider,
        period: float = PRICE_REFRESH,
        retry_after: float = RETRY_AFTER,
    ) -> None:
        self.pricing = pricing
        self.instance_types = instance_types
        self.period = period
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"OnDemandPriceRefresher(region={self.pricing.region!r})"

    def _fallback(self, why: str) -> None:
        region = self.pricing.region
        stand_in = region if region in static_on_demand_regions() else DEFAULT_PRICE_REGION
        log.warning(
            "using the shipped on-demand price table",
            reason=why,
            region=region,
            **{"table-region": stand_in, "table-date": static_prices_date()},
        )

    async def refresh_once(self) -> bool:
        """Read the API's prices; False (after logging the fallback) when it gave none."""
        if self.pricing.isolated_vpc or self.pricing.region.startswith("us-gov"):
            self._fallback("the Price List API is not used in an isolated VPC or GovCloud")
            return True
        try:
            count = await self.pricing.update_on_demand_prices()
        except (ClientError, BotoCoreError) as error:
            code = error_code(error)
            self._fallback(
                f"pricing:GetProducts failed ({code or 'error'}: {error_message(error)})"
            )
            return False
        if not count:
            self._fallback("pricing:GetProducts returned no prices for the region")
            return False
        await self.instance_types.prices_changed()
        log.info("refreshed on-demand prices", region=self.pricing.region, count=count)
        return True

    async def start(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            delay = self.period if await self.refresh_once() else self.retry_after
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)
