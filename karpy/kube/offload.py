"""Keeping the event loop responsive: run CPU-heavy pure functions in threads, watch the lag.

`run_off_loop(fn, *args)` runs `fn` in a small dedicated thread pool and awaits the result; the
interpreter hands the GIL back to the loop every few milliseconds, so watches, probes and lease
renewals keep running while a simulation computes. Pass immutable snapshots: the function runs
concurrently with the loop. `LoopLagMonitor` measures how late the loop wakes up, exports the
worst recent figure as `karpy_event_loop_lag_seconds` and warns past a threshold (100 ms).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

import structlog

from karpy.kube import metrics

__all__ = ["LoopLagMonitor", "run_off_loop", "shutdown_offload"]

P = ParamSpec("P")
R = TypeVar("R")
log = structlog.get_logger("karpy.kube.offload")

_executor: ThreadPoolExecutor | None = None


SWITCH_INTERVAL = 0.001
"""GIL hand-over interval once CPU work runs in threads. At CPython's default 5 ms, every
time the loop thread blocks in epoll or a socket call it waits up to 5 ms for the GIL back, so a
busy loop iteration can take tens of milliseconds; 1 ms keeps the loop's latency low at a small
cost to the worker thread's throughput."""


def _get_executor() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        if sys.getswitchinterval() > SWITCH_INTERVAL:
            sys.setswitchinterval(SWITCH_INTERVAL)
        workers = max(2, min(4, os.cpu_count() or 2))
        _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="karpy-offload")
    return _executor


async def run_off_loop(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Run `fn(*args, **kwargs)` in a worker thread (with the caller's log context)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await loop.run_in_executor(_get_executor(), call)


def shutdown_offload() -> None:
    """Stop the worker threads (waiting for running calls); a later call starts new ones."""
    global _executor
    if _executor is not None:
        _executor.shutdown(wait=True, cancel_futures=True)
        _executor = None


class LoopLagMonitor:
    """Samples loop lag every `interval`; keeps the last `window` samples for percentiles."""

    def __init__(
        self,
        *,
        interval: float = 0.05,
        warn_threshold: float = 0.1,
        window: int = 12_000,
        warn_every: float = 10.0,
    ) -> None:
        self.interval = interval
        self.warn_threshold = warn_threshold
        self.warn_every = warn_every
        self.samples: deque[float] = deque(maxlen=window)
        self._recent: deque[float] = deque(maxlen=max(1, int(5.0 / interval)))
        self._last_warning = float("-inf")

    def record(self, lag: float) -> None:
        self.samples.append(lag)
        self._recent.append(lag)
        metrics.EVENT_LOOP_LAG.set(max(self._recent))
        if lag > self.warn_threshold:
            now = time.monotonic()
            if now - self._last_warning >= self.warn_every:
                self._last_warning = now
                log.warning(
                    "event loop blocked", lag_seconds=round(lag, 3), threshold=self.warn_threshold
                )

    def percentile(self, fraction: float) -> float:
        """e.g. `percentile(0.99)` over the kept samples (0.0 when there are none)."""
        if not self.samples:
            return 0.0
        ordered = sorted(self.samples)
        index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
        return ordered[index]

    async def run(self) -> None:
        """Sample until cancelled."""
        while True:
            started = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.record(max(0.0, time.perf_counter() - started - self.interval))
