"""Injectable clocks: every delay in the runtime goes through one so tests never sleep.

`RealClock` reads the monotonic clock (durations, deadlines, lease expiry) and the UTC wall clock
(timestamps written to the API). `FakeClock` holds both still until a test advances it; sleepers
and timers fire in deadline order as time passes. Other packages reuse `FakeClock` in their tests.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock", "TimerHandle", "wait_event"]


class TimerHandle(Protocol):
    """A scheduled callback that can be cancelled before it fires."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Time source used by queues, rate limiters, reflectors and the leader elector."""

    def now(self) -> float:
        """Monotonic seconds; only differences are meaningful."""
        ...

    def wall(self) -> datetime:
        """The current UTC wall-clock time, for timestamps written to the API."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for `seconds` of this clock's time."""
        ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> TimerHandle:
        """Run `callback` on the event loop after `delay` seconds of this clock's time."""
        ...


class RealClock:
    """The process's monotonic clock and the system wall clock."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_later(self, delay: float, callback: Callable[[], object]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], object]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that only moves when told to: `advance()` fires due timers and wakes sleepers.

    Timers fire synchronously inside `advance`, in deadline order, each seeing `now()` equal to
    its own deadline; a timer scheduled by a firing timer fires in the same call if it is due.
    Use `step()` from async tests: it advances and then lets woken tasks run.
    """

    def __init__(self, *, start: float = 1000.0, wall_start: datetime | None = None) -> None:
        self._now = start
        self._start = start
        self._wall_start = wall_start or datetime(2026, 1, 1, tzinfo=UTC)
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        return self._wall_start + timedelta(seconds=self._now - self._start)

    def call_later(self, delay: float, callback: Callable[[], object]) -> TimerHandle:
        timer = _FakeTimer(self._now + max(0.0, delay), callback)
        heapq.heappush(self._timers, (timer.deadline, next(self._seq), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        timer = self.call_later(seconds, wake)
        try:
            await future
        finally:
            timer.cancel()

    @property
    def pending(self) -> int:
        """Number of timers (including sleepers) not yet fired or cancelled."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)

    def next_deadline(self) -> float | None:
        """Deadline of the earliest live timer, or None."""
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, firing every timer that falls due on the way."""
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards (seconds={seconds})")
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            deadline, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, deadline)
            timer.cancelled = True
            timer.callback()
        self._now = target

    async def step(self, seconds: float = 0.0, *, settle: int = 10) -> None:
        """Advance, then yield to the loop `settle` times so woken tasks can run."""
        self.advance(seconds)
        for _ in range(settle):
            await asyncio.sleep(0)


async def wait_event(event: asyncio.Event, seconds: float, *, clock: Clock) -> bool:
    """Wait for `event` for at most `seconds` of `clock` time; True when it was set."""
    if event.is_set():
        return True
    if seconds <= 0:
        return False
    waiter = asyncio.ensure_future(event.wait())
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        sleeper.cancel()
    return event.is_set()
