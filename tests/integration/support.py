"""What the in-process controller suites share: an environment with a real client and a running
informer cache, in which a test runs controllers until it ends. Object builders: `tests.kit`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubetest import Kubectl, async_wait_until

from karpy.kube import Cache, Client, Informer, Resource, Runnable
from karpy.kube.builder import Reconciler, build

T = TypeVar("T")
E = TypeVar("E", bound="ControllerEnv")
JSON = dict[str, Any]


@dataclass(kw_only=True)
class ControllerEnv:
    """An async client, a running shared informer cache, and the controllers a test started."""

    client: Client
    cache: Cache
    kubectl: Kubectl
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def informer(self, resource: Resource) -> Informer:
        informer = self.cache.informer(resource)
        await asyncio.wait_for(informer.wait_for_sync(), 30)
        return informer

    def run(self, runnable: Runnable | Reconciler[Any]) -> None:
        """Run a reconciler's controller (or anything with `start(stop)`) until the test ends."""
        if not isinstance(runnable, Runnable):
            runnable = build(runnable)
        self._tasks.append(asyncio.create_task(runnable.start(self._stop)))

    async def until(
        self,
        predicate: Callable[[], Awaitable[T | None]] | Callable[[], T | None],
        *,
        timeout: float = 30.0,  # noqa: ASYNC109 - a polling deadline
        message: str = "condition",
    ) -> T:
        async def check() -> T | None:
            value = predicate()
            if asyncio.iscoroutine(value):
                return await value  # type: ignore[no-any-return]
            return value  # type: ignore[return-value]

        return await async_wait_until(check, timeout=timeout, interval=0.1, message=message)

    async def close(self) -> None:
        """Stop the controllers; one that does not finish within 10 s is cancelled."""
        self._stop.set()
        for task in self._tasks:
            try:
                await asyncio.wait_for(task, 10)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()


@contextlib.asynccontextmanager
async def running(env_type: type[E], *, kubeconfig: str, **fields: Any) -> AsyncIterator[E]:
    """An `env_type` connected to the cluster of `kubeconfig`, its informer cache running; the
    controllers stop before the cache and the client close."""
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    env = env_type(client=client, cache=cache, **fields)
    stop = asyncio.Event()
    cache_task = asyncio.create_task(cache.start(stop))
    try:
        yield env
    finally:
        await env.close()
        stop.set()
        await asyncio.wait_for(cache_task, 10)
        await client.close()
