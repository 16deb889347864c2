"""Controllers: N workers draining a rate-limited work queue into a reconcile function.

A reconcile gets a key and makes the world match the desired state for it. It returns `None`
(done), `Result(requeue_after=s)` (look again in s seconds) or `Result(requeue=True)` (again,
with backoff); it raises to be retried with per-key exponential backoff, or raises
`TerminalError` to stop retrying until the key is added again. Any other exception is logged
with its traceback and retried; nothing a reconcile does can kill a worker. A key is never
reconciled by two workers at once (the work queue guarantees it).

Event sources are informers: `watch()` maps changed objects to keys. Handlers are attached when
the controller starts (after the lease is won), and the informer replays its cache to them then,
so a standby replica queues nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog

from karpy.kube import metrics
from karpy.kube.clock import Clock, RealClock
from karpy.kube.informer import EventHandler, Informer
from karpy.kube.ratelimit import RateLimiter
from karpy.kube.resources import object_key, split_key
from karpy.kube.workqueue import RateLimitingQueue, ShutDown

__all__ = ["Controller", "EnqueueHandler", "Result", "TerminalError"]

JSON = dict[str, Any]
K = TypeVar("K", bound=Hashable)
log = structlog.get_logger("karpy.kube.controller")


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing, a timed look again, or a backed-off retry."""

    requeue_after: float | None = None
    requeue: bool = False


class TerminalError(Exception):
    """Retrying will not help: log it, count it, and drop the key until it is added again."""


Reconcile = Callable[[K], Awaitable[Result | None]]
Mapper = Callable[[JSON], "K | Iterable[K] | None"]
Predicate = Callable[[JSON], bool]


class EnqueueHandler(Generic[K]):
    """An informer handler that maps each changed object to keys and adds them to a queue."""

    def __init__(
        self,
        queue: RateLimitingQueue[K],
        *,
        mapper: Callable[[JSON], K | Iterable[K] | None],
        predicate: Predicate | None = None,
    ) -> None:
        self.queue = queue
        self.mapper = mapper
        self.predicate = predicate

    def _enqueue(self, obj: JSON) -> None:
        if self.predicate is not None and not self.predicate(obj):
            return
        keys = self.mapper(obj)
        if keys is None:
            return
        if isinstance(keys, str) or not isinstance(keys, Iterable):
            self.queue.add(keys)
            return
        for key in keys:
            self.queue.add(key)

    def on_add(self, obj: JSON) -> None:
        self._enqueue(obj)

    def on_update(self, old: JSON, new: JSON) -> None:
        self._enqueue(new)

    def on_delete(self, obj: JSON) -> None:
        self._enqueue(obj)


class Controller(Generic[K]):
    """A named reconcile loop; a runnable for the manager, leader-only unless told otherwise.

    Built by `karpy.kube.builder` from a reconciler's `setup`."""

    def __init__(
        self,
        *,
        name: str,
        reconcile: Callable[[K], Awaitable[Result | None]],
        workers: int = 1,
        rate_limiter: RateLimiter[K] | None = None,
        clock: Clock | None = None,
        log_kind: str | None = None,
        reconcile_timeout: float | None = None,
        initial_keys: Iterable[K] = (),
        leader_only: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be at least 1 (got {workers})")
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.clock = clock or RealClock()
        self.queue: RateLimitingQueue[K] = RateLimitingQueue(
            name=name, clock=self.clock, rate_limiter=rate_limiter
        )
        self.log_kind = log_kind
        self.reconcile_timeout = reconcile_timeout
        self.initial_keys = tuple(initial_keys)
        self.needs_leader_election = leader_only
        self._sources: list[tuple[Informer, EventHandler]] = []
        self.stopping = False
        """Set once the controller was told to stop: an in-flight reconcile that is about to
        start new work (a disruption after its validation wait) gives up instead, as a
        reconcile whose context is cancelled does in controller-runtime."""
        self._log = log.bind(controller=name)
        self._active = metrics.ACTIVE_WORKERS.labels(name)

    def watch(
        self,
        informer: Informer,
        *,
        mapper: Callable[[JSON], K | Iterable[K] | None] | None = None,
        predicate: Predicate | None = None,
    ) -> None:
        """Enqueue keys for objects `informer` reports (by default the object's own key)."""
        handler = EnqueueHandler[K](self.queue, mapper=mapper or _own_key, predicate=predicate)
        self._sources.append((informer, handler))

    def watch_handler(self, informer: Informer, handler: EventHandler) -> None:
        """Attach `handler` (which enqueues what it decides) to `informer` when this starts."""
        self._sources.append((informer, handler))

    def enqueue(self, key: K) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: K, delay: float) -> None:
        self.queue.add_after(key, delay)

    async def start(self, stop: asyncio.Event) -> None:
        """Attach sources, run the workers until `stop`, then let in-flight reconciles finish."""
        metrics.MAX_CONCURRENT_RECONCILES.labels(self.name).set(self.workers)
        self._active.set(0)
        for key in self.initial_keys:
            self.queue.add(key)
        for informer, handler in self._sources:
            informer.add_handler(handler)
        self._log.info("starting workers", workers=self.workers)
        async with asyncio.TaskGroup() as group:
            for index in range(self.workers):
                group.create_task(self._worker(), name=f"{self.name}-worker-{index}")
            await stop.wait()
            self.stopping = True
            self._log.info("stopping; waiting for in-flight reconciles")
            self.queue.shutdown()
        self._log.info("stopped")

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            self._active.inc()
            try:
                await self._process(key)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in the bookkeeping below must not kill the worker
                self._log.exception("worker failed while handling a key", key=str(key))
            finally:
                self._active.dec()
                self.queue.done(key)

    def _context(self, key: K) -> dict[str, object]:
        context: dict[str, object] = {"controller": self.name, "reconcileID": str(uuid.uuid4())}
        if self.log_kind and isinstance(key, str):
            namespace, name = split_key(key)
            ref: dict[str, str] = {"name": name}
            if namespace:
                ref["namespace"] = namespace
            context[self.log_kind] = ref
        elif not isinstance(key, str) or key != self.name:
            context["key"] = str(key)
        return context

    async def _process(self, key: K) -> None:
        started = self.clock.now()
        outcome = "success"
        with structlog.contextvars.bound_contextvars(**self._context(key)):
            try:
                if self.reconcile_timeout is not None:
                    async with asyncio.timeout(self.reconcile_timeout):
                        result = await self.reconcile(key)
                else:
                    result = await self.reconcile(key)
            except asyncio.CancelledError:
                raise
            except TerminalError as exc:
                outcome = "error"
                metrics.RECONCILE_ERRORS.labels(self.name).inc()
                metrics.TERMINAL_RECONCILE_ERRORS.labels(self.name).inc()
                self.queue.forget(key)
                log.error("reconciler returned a terminal error", error=str(exc))
            except Exception as exc:
                outcome = "error"
                metrics.RECONCILE_ERRORS.labels(self.name).inc()
                self.queue.add_rate_limited(key)
                log.error(
                    "reconciler error",
                    error=str(exc) or type(exc).__name__,
                    retries=self.queue.num_requeues(key),
                    exc_info=True,
                )
            else:
                if result is not None and result.requeue_after is not None:
                    outcome = "requeue_after"
                    self.queue.forget(key)
                    self.queue.add_after(key, result.requeue_after)
                elif result is not None and result.requeue:
                    outcome = "requeue"
                    self.queue.add_rate_limited(key)
                else:
                    self.queue.forget(key)
            finally:
                metrics.RECONCILE_TIME.labels(self.name).observe(self.clock.now() - started)
                metrics.RECONCILE_TOTAL.labels(self.name, outcome).inc()


def _own_key(obj: JSON) -> Any:
    return object_key(obj)
