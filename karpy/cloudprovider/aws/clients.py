"""Where karpy's AWS API clients come from: one aioboto3 session, a region and an optional
endpoint (moto, a VPC endpoint). `on_client` sees every client as it is made, which is the seam
tests use to count or fail calls through botocore's event hooks; `config` sets retries and
timeouts.

Clients are made once per (service, region, event loop) and reused: making one costs a quarter
of a second of CPU on the event loop (botocore builds the client class, aiohttp loads the CA
bundle), so a burst of 100 launches that each opened their own blocked the loop for tens of
seconds. A shared client keeps a connection pool of `POOL_CONNECTIONS` so concurrent launches
do not queue behind each other. Large responses (the catalogue's pages) are parsed in a worker
thread (`parsing.py`), and the service's JSON models (EC2's is megabytes) are read into
botocore's loader cache in a worker thread before the client is made on the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import Any, Final

import aioboto3
from aiobotocore.config import AioConfig  # type: ignore[import-untyped]
from botocore.exceptions import DataNotFoundError  # type: ignore[import-untyped]

from karpy.cloudprovider.aws.parsing import OffloadingParserFactory
from karpy.kube.offload import run_off_loop

__all__ = ["POOL_CONNECTIONS", "AWSClients", "load_models"]

SERVICE_MODELS: Final = ("service-2", "endpoint-rule-set-1", "paginators-1")
SHARED_DATA: Final = ("endpoints", "partitions", "_retry", "sdk-default-configuration")

POOL_CONNECTIONS: Final = 64
"""Connections per shared client (botocore's default of 10 would serialize a launch burst)."""


def load_models(loader: Any, service: str) -> None:
    """Read what making a `service` client and its paginators loads, into `loader`'s cache
    (botocore caches each file by path, so the client then finds them parsed)."""
    for type_name in SERVICE_MODELS:
        with suppress(DataNotFoundError):
            loader.load_service_model(service, type_name)
    for name in SHARED_DATA:
        with suppress(DataNotFoundError):
            loader.load_data(name)


class AWSClients:
    """Hands out long-lived aioboto3 clients, one per service and region; `close` ends them."""

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
        self._config = (config or AioConfig()).merge(
            AioConfig(max_pool_connections=POOL_CONNECTIONS)
        )
        self.endpoint_url = endpoint_url
        self._session = session or aioboto3.Session()
        self._session._session.register_component(
            "response_parser_factory", OffloadingParserFactory()
        )
        self._on_client = on_client
        self._clients: dict[tuple[str, str, int], tuple[Any, AsyncExitStack]] = {}
        self._locks: dict[tuple[str, str, int], asyncio.Lock] = {}

    @asynccontextmanager
    async def client(self, service: str, *, region: str | None = None) -> AsyncIterator[Any]:
        """The shared aiobotocore client for `service` (in `region`, default the cluster's);
        leaving the block does not close it."""
        yield await self._shared(service, region or self.region)

    async def _shared(self, service: str, region: str) -> Any:
        key = (service, region, id(asyncio.get_running_loop()))
        made = self._clients.get(key)
        if made is not None:
            return made[0]
        async with self._locks.setdefault(key, asyncio.Lock()):
            made = self._clients.get(key)
            if made is None:
                made = await self._open(service, region)
                self._clients[key] = made
        return made[0]

    async def _open(self, service: str, region: str) -> tuple[Any, AsyncExitStack]:
        kwargs: dict[str, Any] = {"region_name": region, "config": self._config}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        await run_off_loop(
            load_models, self._session._session.get_component("data_loader"), service
        )
        stack = AsyncExitStack()
        client = await stack.enter_async_context(self._session.client(service, **kwargs))
        if self._on_client is not None:
            self._on_client(service, client)
        return client, stack

    @property
    def open(self) -> int:
        """How many clients are open (on any loop)."""
        return len(self._clients)

    async def close(self) -> None:
        """Close the clients opened on the running loop (a new call opens new ones)."""
        loop = id(asyncio.get_running_loop())
        for key in [k for k in self._clients if k[2] == loop]:
            _, stack = self._clients.pop(key)
            await stack.aclose()
