"""DescribeInstances coalesced (Karpenter's DescribeInstances batcher).

Drift checks, terminations and liveness each ask EC2 about one instance, and launches of
NodeClaims a previous leader may have launched look for an instance tagged with the NodeClaim's
name; a spot interruption wave asks hundreds of either within a second, and each call costs a
request of its own (rate-limited on EC2, a scan of every instance in moto, and signing, sending
and parsing cost CPU on karpy's event loop). Calls made within `window` seconds of the first
share one request whose filter names them all (a filter, not `InstanceIds`: an unknown ID is
then simply absent instead of failing the whole call for the others); `key` says which value of
an answered instance a caller asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from karpy.cloudprovider.aws.batchmetrics import DESCRIBE_INSTANCES, observe_batch

__all__ = ["MAX_IDS", "WINDOW", "DescribeBatcher", "instance_id"]

WINDOW: Final = 0.1
"""Seconds a batch stays open after its first instance ID."""
MAX_IDS: Final = 200
"""IDs per request (EC2 accepts 200 values in one filter)."""

Instance = Mapping[str, Any]
Describe = Callable[[Sequence[str]], Awaitable[list[Instance]]]
"""Describe the instances of these keys (one request, paginated)."""
Key = Callable[[Instance], str]


def instance_id(instance: Instance) -> str:
    return str(instance.get("InstanceId"))


class DescribeBatcher:
    """Answers `get(key)` from shared DescribeInstances requests."""

    def __init__(
        self,
        describe: Describe,
        *,
        key: Key = instance_id,
        window: float = WINDOW,
        max_ids: int = MAX_IDS,
    ):
        self._describe = describe
        self._key = key
        self._window = window
        self._max_ids = max_ids
        self._waiting: dict[str, list[asyncio.Future[Instance | None]]] = {}
        self._flush: asyncio.TimerHandle | None = None
        self._opened = 0.0
        self._requests: set[asyncio.Future[None]] = set()

    async def get(self, key: str) -> Instance | None:
        """The (first) instance of this key as DescribeInstances returns it, or None."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Instance | None] = loop.create_future()
        if not self._waiting:
            self._opened = loop.time()
        self._waiting.setdefault(key, []).append(future)
        if len(self._waiting) >= self._max_ids:
            self._send()
        elif self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(self._window, self._send)
        return await future

    def _send(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        waiting, self._waiting = self._waiting, {}
        if waiting:
            seconds = asyncio.get_running_loop().time() - self._opened
            size = sum(len(futures) for futures in waiting.values())
            observe_batch(DESCRIBE_INSTANCES, seconds=seconds, size=size)
            request = asyncio.ensure_future(self._answer(waiting))
            self._requests.add(request)
            request.add_done_callback(self._requests.discard)

    async def _answer(self, waiting: dict[str, list[asyncio.Future[Instance | None]]]) -> None:
        try:
            found = await self._describe(sorted(waiting))
        except BaseException as exc:  # every caller of this batch sees the failure
            for futures in waiting.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        by_key: dict[str, Instance] = {}
        for instance in found:
            by_key.setdefault(self._key(instance), instance)
        for key, futures in waiting.items():
            for future in futures:
                if not future.done():
                    future.set_result(by_key.get(key))
