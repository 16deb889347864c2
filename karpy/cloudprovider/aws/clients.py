"""Where karpy's AWS API clients come from: one aioboto3 session, a region and an optional
endpoint (moto, a VPC endpoint). `on_client` sees every client as it is made, which is the seam
tests use to count or fail calls through botocore's event hooks; `config` sets retries and
timeouts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aioboto3
from aiobotocore.config import AioConfig  # type: ignore[import-untyped]

__all__ = ["AWSClients"]


class AWSClients:
    """Opens short-lived aioboto3 clients (refreshes run every few hours, not per request)."""

    def __init__(
        self,
        region: str,
        *,
        endpoint_url: str | None = None,
        session: aioboto3.Session | None = None,
        on_client: Callable[[str, Any], None] | None = None,
        config: AioConfig | None = None,
    ) -> None:
        self.region = region
        self._config = config
        self.endpoint_url = endpoint_url
        self._session = session or aioboto3.Session()
        self._on_client = on_client

    @asynccontextmanager
    async def client(self, service: str, *, region: str | None = None) -> AsyncIterator[Any]:
        """An aiobotocore client for `service` (in `region`, default the cluster's)."""
        kwargs: dict[str, Any] = {"region_name": region or self.region}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self._config is not None:
            kwargs["config"] = self._config
        async with self._session.client(service, **kwargs) as client:
            if self._on_client is not None:
                self._on_client(service, client)
            yield client
