"""A shared informer: one reflector, one store, many handlers that only enqueue.

The informer applies the reflector's list and watch results to its `Store` (indexes included)
and then tells every registered handler what changed. Handlers run on the event loop between
watch events, so they must be cheap and non-blocking: map the object to a key and add it to a
work queue. A handler that raises is logged and skipped; it cannot stop the informer.
A handler registered after the first sync is first told about every cached object as an add,
as client-go does. An informer of an `optional` resource the API server does not serve syncs
empty and fills once the resource appears (see `karpy.kube.reflector`).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from karpy.kube.client import Client, Selector, WatchEvent, selector_string
from karpy.kube.clock import Clock, RealClock
from karpy.kube.reflector import (
    DEFAULT_ABSENT_HINT,
    DEFAULT_ABSENT_RECHECK,
    DEFAULT_PAGE_SIZE,
    Reflector,
)
from karpy.kube.resources import Resource
from karpy.kube.store import IndexFunc, Store

__all__ = ["EventHandler", "HandlerFuncs", "Informer"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.kube.informer")


class EventHandler(Protocol):
    """Told about every change to an informer's store, after the store changed."""

    def on_add(self, obj: JSON) -> None: ...

    def on_update(self, old: JSON, new: JSON) -> None: ...

    def on_delete(self, obj: JSON) -> None: ...


@dataclass(frozen=True, slots=True)
class HandlerFuncs:
    """An `EventHandler` from optional callables."""

    add: Callable[[JSON], None] | None = None
    update: Callable[[JSON, JSON], None] | None = None
    delete: Callable[[JSON], None] | None = None

    def on_add(self, obj: JSON) -> None:
        if self.add is not None:
            self.add(obj)

    def on_update(self, old: JSON, new: JSON) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: JSON) -> None:
        if self.delete is not None:
            self.delete(obj)


class Informer:
    """Caches one collection of one resource and fans its changes out to handlers."""

    def __init__(
        self,
        *,
        client: Client,
        resource: Resource,
        namespace: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        transform: Callable[[JSON], JSON] | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        inactivity_timeout: float = 90.0,
        clock: Clock | None = None,
        absent_recheck: float = DEFAULT_ABSENT_RECHECK,
        absent_hint: str = DEFAULT_ABSENT_HINT,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.label_selector = selector_string(label_selector)
        self.field_selector = selector_string(field_selector)
        self.transform = transform
        self.store = Store(indexers=indexers)
        self.clock = clock or RealClock()
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self.reflector = Reflector(
            client=client,
            resource=resource,
            sink=self,
            transform=transform,
            namespace=namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=page_size,
            inactivity_timeout=inactivity_timeout,
            clock=self.clock,
            absent_recheck=absent_recheck,
            absent_hint=absent_hint,
        )
        self._log = log.bind(resource=resource.display)

    def __repr__(self) -> str:
        return (
            f"Informer({self.resource.display}, namespace={self.namespace!r}, "
            f"labels={self.label_selector!r}, fields={self.field_selector!r})"
        )

    # -- reading ----------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first list has been applied to the store."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    @property
    def served(self) -> bool | None:
        """False while an optional resource is not served (the cache is then empty), None
        before the first list answered."""
        return self.reflector.served

    def get(self, key: str) -> JSON | None:
        return self.store.get(key)

    def list(self) -> list[JSON]:
        return self.store.list()

    def by_index(self, name: str, value: str) -> builtins.list[JSON]:
        return self.store.by_index(name, value)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        self.store.add_indexer(name, func)

    # -- handlers ---------------------------------------------------------------------------------

    def add_handler(self, handler: EventHandler) -> None:
        """Register `handler`; if the cache is already filled, replay it as adds first."""
        self._handlers.append(handler)
        if self.has_synced():
            for obj in self.store.list():
                self._call(handler.on_add, obj)

    def _call(self, func: Callable[..., None], *args: JSON) -> None:
        try:
            func(*args)
        except Exception:
            self._log.exception("event handler failed", handler=repr(func))

    # -- ReflectorSink ----------------------------------------------------------------------------

    def replace(self, items: builtins.list[JSON], resource_version: str) -> None:
        diff = self.store.replace(items)
        for handler in self._handlers:
            for obj in diff.deleted:
                self._call(handler.on_delete, obj)
            for old, new in diff.updated:
                self._call(handler.on_update, old, new)
            for obj in diff.added:
                self._call(handler.on_add, obj)
        if not self._synced.is_set():
            self._synced.set()
            self._log.info("cache synced", objects=len(self.store))
        elif diff.deleted or diff.added or diff.updated:
            self._log.info(
                "relist changed the cache",
                added=len(diff.added),
                updated=len(diff.updated),
                deleted=len(diff.deleted),
            )

    def apply(self, event: WatchEvent) -> None:
        obj = event.object
        if event.type == "DELETED":
            old = self.store.delete(self.store.key_func(obj))
            if old is None:
                return  # already gone (e.g. removed by a relist)
            for handler in self._handlers:
                self._call(handler.on_delete, obj)
            return
        old = self.store.upsert(obj)
        for handler in self._handlers:
            if old is None:
                self._call(handler.on_add, obj)
            else:
                self._call(handler.on_update, old, obj)

    # -- running ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled."""
        await self.reflector.run()
