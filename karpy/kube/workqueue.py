"""A work queue with client-go's semantics, for one event loop.

- Duplicates collapse: a key added several times before a worker takes it is processed once.
- A key is never handed to two workers at once: adding a key that is being processed marks it
  dirty, and `done()` puts it back on the queue exactly once.
- `add_after` delays an add (the earliest pending time for a key wins); `add_rate_limited`
  delays it by the rate limiter's verdict, `forget` resets the key's backoff.
- `shutdown()` stops intake: later adds are ignored and idle or future `get()` calls raise
  `ShutDown`. Queued keys are abandoned rather than drained (reconciles are level-triggered; the
  next process relists), while `shutdown_with_drain()` also waits for in-flight keys to be
  `done()`.

All methods must be called on the event loop thread; nothing here blocks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from karpy.kube import metrics
from karpy.kube.clock import Clock, RealClock, TimerHandle
from karpy.kube.ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue", "ShutDown", "WorkQueue"]

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """The queue is shut down: there will be no more keys for this worker."""


class WorkQueue(Generic[K]):
    """client-go's `TypedDelayingInterface`: dirty/processing sets plus delayed adds."""

    def __init__(self, *, name: str | None = None, clock: Clock | None = None) -> None:
        self._name = name
        self._clock = clock or RealClock()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._added_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}
        self._waiting: dict[K, tuple[float, TimerHandle]] = {}
        self._nonempty = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._shutting_down = False
        if name is not None:
            self._depth = metrics.WORKQUEUE_DEPTH.labels(name, name)
            self._adds = metrics.WORKQUEUE_ADDS.labels(name, name)
            self._latency = metrics.WORKQUEUE_QUEUE_DURATION.labels(name, name)
            self._work = metrics.WORKQUEUE_WORK_DURATION.labels(name, name)
            self._retries = metrics.WORKQUEUE_RETRIES.labels(name, name)
            metrics.register_in_flight(self)

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def clock(self) -> Clock:
        return self._clock

    def __len__(self) -> int:
        """Keys waiting for a worker (not counting delayed or in-flight ones)."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def processing(self) -> frozenset[K]:
        return frozenset(self._processing)

    @property
    def waiting(self) -> int:
        """Keys scheduled by `add_after` that have not yet been added."""
        return len(self._waiting)

    def add(self, item: K) -> None:
        """Queue `item` unless it is already queued; ignored after shutdown."""
        if self._shutting_down:
            return
        if item in self._dirty:
            return
        if self._name is not None:
            self._adds.inc()
        self._dirty.add(item)
        if item in self._processing:
            return  # done() re-queues it once the current worker finishes
        self._push(item)

    def _push(self, item: K) -> None:
        self._queue.append(item)
        self._added_at.setdefault(item, self._clock.now())
        if self._name is not None:
            self._depth.inc()
        self._nonempty.set()

    def add_after(self, item: K, delay: float) -> None:
        """Add `item` after `delay` seconds; an earlier pending time for the item wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.now() + delay
        pending = self._waiting.get(item)
        if pending is not None:
            if pending[0] <= ready_at:
                return
            pending[1].cancel()
        handle = self._clock.call_later(delay, lambda: self._fire(item))
        self._waiting[item] = (ready_at, handle)

    def _fire(self, item: K) -> None:
        self._waiting.pop(item, None)
        self.add(item)

    async def get(self) -> K:
        """Wait for the next key and mark it processing; raises `ShutDown` once shut down."""
        while True:
            if self._shutting_down:
                raise ShutDown(self._name or "work queue")
            if self._queue:
                break
            self._nonempty.clear()
            await self._nonempty.wait()
        item = self._queue.popleft()
        now = self._clock.now()
        added = self._added_at.pop(item, None)
        if self._name is not None:
            self._depth.dec()
            if added is not None:
                self._latency.observe(now - added)
        self._processing.add(item)
        self._started_at[item] = now
        self._dirty.discard(item)
        self._idle.clear()
        return item

    def done(self, item: K) -> None:
        """Finish processing `item`; re-queue it once if it was added meanwhile."""
        self._processing.discard(item)
        started = self._started_at.pop(item, None)
        if self._name is not None and started is not None:
            self._work.observe(self._clock.now() - started)
        if item in self._dirty and not self._shutting_down:
            self._push(item)
        if not self._processing:
            self._idle.set()

    def shutdown(self) -> None:
        """Stop intake: drop delayed adds, wake every waiting `get()` with `ShutDown`."""
        if self._shutting_down:
            return
        self._shutting_down = True
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        if self._name is not None:
            self._depth.dec(len(self._queue))
        self._queue.clear()
        self._added_at.clear()
        self._dirty.clear()
        self._nonempty.set()

    async def shutdown_with_drain(self) -> None:
        """Shut down and wait until every in-flight key is `done()`."""
        self.shutdown()
        await self._idle.wait()

    def unfinished_work_seconds(self) -> float:
        now = self._clock.now()
        return sum(now - t for t in self._started_at.values())

    def longest_running_processor_seconds(self) -> float:
        if not self._started_at:
            return 0.0
        return self._clock.now() - min(self._started_at.values())


class RateLimitingQueue(WorkQueue[K]):
    """A `WorkQueue` whose retries are delayed by a `RateLimiter`."""

    def __init__(
        self,
        *,
        name: str | None = None,
        clock: Clock | None = None,
        rate_limiter: RateLimiter[K] | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock)
        self.rate_limiter: RateLimiter[K] = rate_limiter or default_controller_rate_limiter(
            self.clock
        )

    def add_rate_limited(self, item: K) -> None:
        """Add `item` when the rate limiter says it may be retried."""
        if self._shutting_down:
            return
        if self._name is not None:
            self._retries.inc()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: K) -> None:
        """Reset `item`'s backoff (it succeeded, or retrying it is pointless)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: K) -> int:
        return self.rate_limiter.num_requeues(item)
