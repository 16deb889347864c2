"""List-then-watch with client-go's recovery rules, feeding one informer.

The loop lists (paginated, each page trimmed as it is decoded), replaces the store, then watches
from the list's resourceVersion with bookmarks, a random 5-10 minute server timeout and an
inactivity timeout (so a half-open connection cannot hang it). When the watch ends normally it
re-watches from the last resourceVersion seen; on 410 Gone it relists at once (the store's
replace emits deletes for objects that vanished meanwhile); on other failures it waits a
jittered backoff and re-watches, or relists if it never got a list. It never gives up and never
exits on its own: it runs until cancelled.

An `optional` resource the API server does not serve (404 on list: its CRD is not installed)
is not an error: the sink gets an empty list (so the informer syncs, and objects cached before
a CRD was deleted are deleted), one info line says how to install it, and the list is tried
again every `absent_recheck` seconds until it succeeds. A required resource keeps failing
loudly.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from karpy.kube.backoff import Backoff
from karpy.kube.client import Client, Selector, WatchEvent, selector_string
from karpy.kube.clock import Clock, RealClock
from karpy.kube.errors import ApiError, ForbiddenError, GoneError, KubeError, NotFoundError
from karpy.kube.memory import release_free_memory
from karpy.kube.resources import Resource

__all__ = [
    "DEFAULT_ABSENT_HINT",
    "DEFAULT_ABSENT_RECHECK",
    "DEFAULT_PAGE_SIZE",
    "Reflector",
    "ReflectorSink",
]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.kube.reflector")

DEFAULT_PAGE_SIZE = 100
"""Objects per list page. A raw page of Deployment pods decodes into about 200 KB of Python
objects per pod, and the allocator keeps much of that arena space after the page is freed
(objects that live on get placed among it), so resident memory grows by about one decoded page.
In the informer benchmark 500-pod pages cost 4.9 KiB of resident memory per cached pod and
100-pod pages 2.9 KiB, at the same speed; a smaller page also blocks the event loop for less
time while it is decoded (about 20 ms for 100 such pods)."""

DEFAULT_ABSENT_RECHECK = 60.0
"""Seconds between lists of an optional resource the API server does not serve: one cheap
request a minute needs no more RBAC than the informer has (a CRD watch would)."""
DEFAULT_ABSENT_HINT = "install its CustomResourceDefinition to use it"


class ReflectorSink(Protocol):
    """Where a reflector delivers: a full replacement after each list, then single events."""

    def replace(self, items: list[JSON], resource_version: str) -> None: ...

    def apply(self, event: WatchEvent) -> None: ...


class Reflector:
    """Keeps a sink in step with one (resource, namespace, selectors) collection."""

    def __init__(
        self,
        *,
        client: Client,
        resource: Resource,
        sink: ReflectorSink,
        transform: Callable[[JSON], JSON] | None = None,
        namespace: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        watch_timeout: tuple[int, int] = (300, 600),
        inactivity_timeout: float = 90.0,
        backoff: Backoff | None = None,
        clock: Clock | None = None,
        absent_recheck: float = DEFAULT_ABSENT_RECHECK,
        absent_hint: str = DEFAULT_ABSENT_HINT,
    ) -> None:
        self.client = client
        self.resource = resource
        self.sink = sink
        self.transform = transform
        self.namespace = namespace
        self.label_selector = selector_string(label_selector)
        self.field_selector = selector_string(field_selector)
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.inactivity_timeout = inactivity_timeout
        self.backoff = backoff or Backoff(initial=0.8, maximum=30.0)
        self.clock = clock or RealClock()
        self.absent_recheck = absent_recheck
        self.absent_hint = absent_hint
        self.resource_version: str | None = None
        self.served: bool | None = None
        """Whether the last list found the resource served (None before the first answer)."""
        self.lists = 0
        self.watches = 0
        self.expired = 0
        self.last_error: BaseException | None = None
        self._log = log.bind(resource=resource.display, namespace=namespace or "")

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                if self.resource_version is None:
                    if not await self._list():
                        await self.clock.sleep(self.absent_recheck)
                        continue
                    self.backoff.reset()
                started = self.clock.now()
                delivered = await self._watch()
                self.last_error = None
                if delivered == 0 and self.clock.now() - started < 1.0:
                    await self.clock.sleep(self.backoff.next())  # a server closing at once
                else:
                    self.backoff.reset()
            except asyncio.CancelledError:
                raise
            except GoneError as exc:
                self.expired += 1
                self._log.info("watch expired; relisting", reason=str(exc))
                self.last_error = exc
                relisted_quickly = self.resource_version is None
                self.resource_version = None
                if relisted_quickly:  # the list itself was gone: do not spin
                    await self.clock.sleep(self.backoff.next())
            except (ForbiddenError, NotFoundError) as exc:
                self.last_error = exc
                self.resource_version = None
                if isinstance(exc, NotFoundError) and self.resource.optional:
                    # The watch found no such resource: the next list says whether it is gone.
                    self._log.info("watch found the resource not served; relisting")
                else:
                    self._log.error(
                        "cannot list or watch", status=exc.status, error=exc.message or str(exc)
                    )
                await self.clock.sleep(self.backoff.next())
            except (KubeError, ValueError) as exc:
                self.last_error = exc
                delay = self.backoff.next()
                level = "warning" if isinstance(exc, ApiError) else "info"
                getattr(self._log, level)(
                    "watch interrupted; retrying", error=str(exc), retry_in=round(delay, 2)
                )
                await self.clock.sleep(delay)
            except Exception as exc:
                self.last_error = exc
                self._log.exception("reflector failed unexpectedly; relisting")
                self.resource_version = None
                await self.clock.sleep(self.backoff.next())

    async def _list(self) -> bool:
        """List into the sink; False when an optional resource is not served (sink emptied)."""
        items: list[JSON] = []
        version = ""
        try:
            async for page, page_version in self.client.list_pages(
                self.resource,
                namespace=self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                limit=self.page_size,
                transform=self.transform,  # trimmed as each page is decoded
            ):
                items.extend(page)
                del page
                version = page_version
                await asyncio.sleep(0)  # let the loop breathe between pages
        except NotFoundError as exc:
            if not self.resource.optional:
                raise
            self._absent(exc)
            return False
        if self.served is False:
            self._log.info("optional resource now served; watching it", crd=self.resource.display)
        self.served = True
        self.sink.replace(items, version)
        del items
        self.resource_version = version
        self.lists += 1
        release_free_memory()  # the raw pages' heap pages are free now, but still resident
        return True

    def _absent(self, exc: NotFoundError) -> None:
        """An optional resource is not served: hold it as empty, say so once."""
        self.last_error = exc
        if self.served is not False:
            self._log.info(
                f"{self.resource.display} is not served by the API server (its "
                "CustomResourceDefinition is not installed): running without it, as if it had "
                f"no objects, and checking again every {self.absent_recheck:g}s; "
                f"{self.absent_hint}",
                crd=self.resource.display,
            )
        else:
            self._log.debug("optional resource still not served", crd=self.resource.display)
        self.served = False
        self.sink.replace([], "")

    async def _watch(self) -> int:
        """Watch from `resource_version` until the server ends it; returns events seen."""
        low, high = self.watch_timeout
        seen = 0
        self.watches += 1
        sink = self.sink
        async for event in self.client.watch(
            self.resource,
            namespace=self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=random.randint(low, high),
            inactivity_timeout=self.inactivity_timeout,
            allow_bookmarks=True,
            transform=self.transform,
        ):
            seen += 1
            version = (event.object.get("metadata") or {}).get("resourceVersion")
            if event.type == "BOOKMARK":
                if version:
                    self.resource_version = version
                continue
            if event.type not in ("ADDED", "MODIFIED", "DELETED"):
                self._log.warning("ignoring unknown watch event", type=event.type)
                continue
            sink.apply(event)
            if version:
                self.resource_version = version
        return seen
