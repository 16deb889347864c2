"""The watch seam of `karpy top`: a feed delivers the fleet's objects as events to a sink.

`WatchFeed` lists and watches every kind `karpy top` reads with karpy's shared informers (one
list, then one watch per kind, resumed from its resourceVersion; no polling), and tells the
sink each change after its informer applied it. Tests hand the app another `Feed` that
delivers events they choose through the same sink, so the app's path from an event to a row
is the one a real watch takes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from karpy.kube import Cache, Client, HandlerFuncs, Resource
from karpy.simulation.live import KINDS
from karpy.top.model import ADDED, DELETED, MODIFIED

__all__ = ["SYNCED", "Feed", "Sink", "WatchFeed"]

JSON = dict[str, Any]

SYNCED: Final = "SYNCED"
"""The event a feed sends (kind "", object {}) once every kind has been listed."""

Sink = Callable[[str, str, JSON], None]
"""Called with (kind plural, event type, object) for every change, on the feed's loop."""


class Feed(Protocol):
    async def run(self, sink: Sink) -> None:
        """Deliver events to `sink` until cancelled."""
        ...

    def problem(self) -> str | None:
        """Why the feed is not current now (a failing list or watch), or None."""
        ...


def _handler(kind: str, sink: Sink) -> HandlerFuncs:
    return HandlerFuncs(
        add=lambda obj: sink(kind, ADDED, obj),
        update=lambda _old, new: sink(kind, MODIFIED, new),
        delete=lambda obj: sink(kind, DELETED, obj),
    )


class WatchFeed:
    """Shared informers on the cluster of a kubeconfig (and context)."""

    def __init__(
        self,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        kinds: Sequence[Resource] = KINDS,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.context = context
        self.kinds = tuple(kinds)
        self._cache: Cache | None = None

    def problem(self) -> str | None:
        """The last error of the first informer whose list or watch is failing."""
        for informer in self._cache.informers if self._cache is not None else ():
            error = informer.reflector.last_error
            if error is not None:
                return f"{informer.resource.display}: {error} (retrying)"
        return None

    async def run(self, sink: Sink) -> None:
        async with await Client.connect(
            kubeconfig=self.kubeconfig, context=self.context, user_agent="karpy-top"
        ) as client:
            cache = self._cache = Cache(client)
            for kind in self.kinds:
                cache.informer(kind).add_handler(_handler(kind.plural, sink))
            stop = asyncio.Event()
            running = asyncio.create_task(cache.start(stop))
            synced = asyncio.create_task(cache.wait_for_sync())
            try:
                # the cache failing before its first sync ends the feed with its error
                await asyncio.wait((running, synced), return_when=asyncio.FIRST_COMPLETED)
                if synced.done():
                    sink("", SYNCED, {})
                await running
            finally:
                stop.set()
                for task in (running, synced):
                    task.cancel()
                await asyncio.gather(running, synced, return_exceptions=True)
