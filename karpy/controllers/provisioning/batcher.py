"""The provisioning batch window: gather pod triggers until they stop coming.

`wait()` waits up to one second for a first trigger; once one arrives, every new trigger keeps
the window open for `idle` more seconds, up to `maximum` in all (BATCH_IDLE_DURATION and
BATCH_MAX_DURATION, 1 s and 10 s by default). A trigger already seen in the current window
(the same pod re-queued) does not extend it. With a `window` callable the two durations are read
from it when each batch opens, so the `default` SchedulingConfig can change them while running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from karpy.kube.clock import Clock, RealClock, wait_event

__all__ = ["Batcher"]

FIRST_TRIGGER_WAIT = 1.0


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
        """(idle, maximum) now, read as each batch opens; None keeps `idle` and `maximum`."""
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
        if self.window is not None:
            self.idle, self.maximum = self.window()
        started = self.clock.now()
        while True:
            self._event.clear()
            left = self.maximum - (self.clock.now() - started)
            if left <= 0:
                break
            if not await wait_event(self._event, min(self.idle, left), clock=self.clock):
                break
        self._seen.clear()
        self._event.clear()
        return True
