"""The provisioning batch window: gather pod triggers until they stop coming.

`wait()` waits up to one second for a first trigger; once one arrives, every new trigger keeps
the window open for `idle` more seconds, up to `maximum` in all (BATCH_IDLE_DURATION and
BATCH_MAX_DURATION, 1 s and 10 s by default). A trigger already seen in the current window
(the same pod re-queued) does not extend it. With a `window` callable the two durations are read
from it at every step of the window, so an edit of the `default` SchedulingConfig applies at once,
even to the batch that is open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from karpy.kube.clock import Clock, RealClock, wait_event

__all__ = ["Batcher"]

FIRST_TRIGGER_WAIT = 1.0
WINDOW_POLL = 1.0
"""How often an open batch re-reads a live `window`."""


class Batcher:
    """Collects trigger keys (pod UIDs) into batches."""

    def __init__(
        self,
        *,
        idle: float,
        maximum: float,
        clock: Clock | None = None,
        window: Callable[[], tuple[float, float]] | None = None,
    ) -> None:
        self.idle = idle
        self.maximum = maximum
        self.clock = clock or RealClock()
        self.window = window
        """(idle, maximum) now, read at each step of a batch; None keeps `idle` and `maximum`."""
        self._event = asyncio.Event()
        self._seen: set[str] = set()

    def trigger(self, key: str) -> None:
        """Something (a pod UID) needs provisioning; duplicates within a window are ignored."""
        if key in self._seen:
            return
        self._seen.add(key)
        self._event.set()

    @property
    def pending(self) -> int:
        return len(self._seen)

    async def wait(self) -> bool:
        """True when a batch has closed; False when nothing triggered within a second."""
        if not await wait_event(self._event, FIRST_TRIGGER_WAIT, clock=self.clock):
            return False
        started = last = self.clock.now()
        self._event.clear()
        while True:
            if self.window is not None:
                self.idle, self.maximum = self.window()
            now = self.clock.now()
            deadline = min(last + self.idle, started + self.maximum)
            if now >= deadline:
                break
            step = deadline - now if self.window is None else min(deadline - now, WINDOW_POLL)
            if await wait_event(self._event, step, clock=self.clock):
                self._event.clear()
                last = self.clock.now()
        self._seen.clear()
        self._event.clear()
        return True
