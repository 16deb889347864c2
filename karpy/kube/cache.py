"""Shared informers for the whole process, one per collection, like controller-runtime's cache.

Every controller asking for pods gets the same `Informer`, so the process holds one copy of each
object and one watch per collection. A collection is a resource plus namespace and selectors.
Transforms are chosen per resource (defaults: pods and nodes trimmed to what karpy reads,
`managedFields` dropped from everything else) and indexes are registered per resource (pods by
node name, nodes by providerID, plus any a caller adds); both apply to every informer of that
resource. The cache is a runnable in the manager's caches group: it runs on every replica, and
informers created after it started begin at once. Informers of `optional` resources the API
server does not serve count as synced (empty), so a missing extension CRD holds nothing back;
`absent_hint` says in their log line how to install it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from karpy.kube.client import Client, Selector, selector_string
from karpy.kube.clock import Clock, RealClock
from karpy.kube.informer import Informer
from karpy.kube.reflector import DEFAULT_ABSENT_HINT, DEFAULT_ABSENT_RECHECK, DEFAULT_PAGE_SIZE
from karpy.kube.resources import NODES, PODS, Resource
from karpy.kube.store import INDEX_NODE_NAME, INDEX_PROVIDER_ID, IndexFunc, field_indexer
from karpy.kube.transforms import strip_managed_fields, trim_node, trim_pod

__all__ = ["Cache", "CollectionKey"]

JSON = dict[str, Any]
Transform = Callable[[JSON], JSON]
log = structlog.get_logger("karpy.kube.cache")

DEFAULT_TRANSFORMS: Mapping[Resource, Transform] = {PODS: trim_pod, NODES: trim_node}
DEFAULT_INDEXERS: Mapping[Resource, Mapping[str, IndexFunc]] = {
    PODS: {INDEX_NODE_NAME: field_indexer("spec", "nodeName")},
    NODES: {INDEX_PROVIDER_ID: field_indexer("spec", "providerID")},
}


@dataclass(frozen=True, slots=True)
class CollectionKey:
    resource: Resource
    namespace: str | None
    label_selector: str | None
    field_selector: str | None


class Cache:
    """Hands out shared informers and runs them."""

    def __init__(
        self,
        client: Client,
        *,
        transforms: Mapping[Resource, Transform | None] | None = None,
        default_transform: Transform | None = strip_managed_fields,
        page_size: int = DEFAULT_PAGE_SIZE,
        clock: Clock | None = None,
        absent_recheck: float = DEFAULT_ABSENT_RECHECK,
        absent_hint: str = DEFAULT_ABSENT_HINT,
    ) -> None:
        self.client = client
        self.absent_recheck = absent_recheck
        self.absent_hint = absent_hint
        self.clock = clock or RealClock()
        self.page_size = page_size
        self.default_transform = default_transform
        self._transforms: dict[Resource, Transform | None] = dict(DEFAULT_TRANSFORMS)
        self._transforms.update(transforms or {})
        self._indexers: dict[Resource, dict[str, IndexFunc]] = {
            r: dict(i) for r, i in DEFAULT_INDEXERS.items()
        }
        self._informers: dict[CollectionKey, Informer] = {}
        self._tasks: dict[CollectionKey, asyncio.Task[None]] = {}
        self._task_group: asyncio.TaskGroup | None = None

    # -- configuration ----------------------------------------------------------------------------

    def set_transform(self, resource: Resource, transform: Transform | None) -> None:
        """Choose how `resource` is trimmed on ingest; must precede its first informer."""
        if any(k.resource == resource for k in self._informers):
            raise RuntimeError(
                f"{resource.display} already has an informer; set its transform first"
            )
        self._transforms[resource] = transform

    def transform_for(self, resource: Resource) -> Transform | None:
        return self._transforms.get(resource, self.default_transform)

    def add_indexer(self, resource: Resource, name: str, func: IndexFunc) -> None:
        """Index every informer of `resource`, present and future, by `func`."""
        existing = self._indexers.setdefault(resource, {})
        if name in existing and existing[name] is not func:
            raise ValueError(f"{resource.display} already has an index named {name!r}")
        existing[name] = func
        for key, informer in self._informers.items():
            if key.resource == resource:
                informer.add_indexer(name, func)

    # -- informers --------------------------------------------------------------------------------

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> Informer:
        """The shared informer for this collection, created (and started, if running) on demand."""
        key = CollectionKey(
            resource,
            namespace or None,
            selector_string(label_selector),
            selector_string(field_selector),
        )
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                client=self.client,
                resource=resource,
                namespace=key.namespace,
                label_selector=key.label_selector,
                field_selector=key.field_selector,
                transform=self.transform_for(resource),
                indexers=self._indexers.get(resource),
                page_size=self.page_size,
                clock=self.clock,
                absent_recheck=self.absent_recheck,
                absent_hint=self.absent_hint,
            )
            self._informers[key] = informer
            if self._task_group is not None:
                self._start(key, informer)
        return informer

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    def unsynced(self) -> list[Informer]:
        return [i for i in self._informers.values() if not i.has_synced()]

    async def wait_for_sync(self) -> None:
        """Wait until every informer (including ones added while waiting) has synced."""
        while True:
            pending = self.unsynced()
            if not pending:
                return
            await asyncio.gather(*(i.wait_for_sync() for i in pending))

    # -- running ----------------------------------------------------------------------------------

    def _start(self, key: CollectionKey, informer: Informer) -> None:
        assert self._task_group is not None
        self._tasks[key] = self._task_group.create_task(informer.run(), name=repr(informer))

    async def start(self, stop: asyncio.Event) -> None:
        """Run every informer until `stop` is set."""
        async with asyncio.TaskGroup() as group:
            self._task_group = group
            for key, informer in self._informers.items():
                self._start(key, informer)
            try:
                await stop.wait()
            finally:
                self._task_group = None
                for task in self._tasks.values():
                    task.cancel()
                self._tasks.clear()
