"""FakeClock: timers fire in deadline order, sleepers wake only when time is advanced."""

from __future__ import annotations

import asyncio

import pytest

from karpy.kube.clock import FakeClock, wait_event


def test_timers_fire_in_deadline_order_and_see_their_own_time() -> None:
    clock = FakeClock(start=0.0)
    fired: list[tuple[str, float]] = []
    clock.call_later(3.0, lambda: fired.append(("c", clock.now())))
    clock.call_later(1.0, lambda: fired.append(("a", clock.now())))
    handle = clock.call_later(2.0, lambda: fired.append(("b", clock.now())))
    handle.cancel()
    clock.advance(2.5)
    assert fired == [("a", 1.0)]
    assert clock.now() == 2.5
    clock.advance(1.0)
    assert fired == [("a", 1.0), ("c", 3.0)]
    assert clock.next_deadline() is None


def test_timer_scheduled_by_a_timer_fires_in_the_same_advance() -> None:
    clock = FakeClock(start=0.0)
    fired: list[float] = []
    clock.call_later(1.0, lambda: clock.call_later(1.0, lambda: fired.append(clock.now())))
    clock.advance(5.0)
    assert fired == [2.0]


def test_cannot_go_backwards() -> None:
    with pytest.raises(ValueError):
        FakeClock().advance(-1)


def test_wall_clock_moves_with_monotonic_time() -> None:
    clock = FakeClock()
    before = clock.wall()
    clock.advance(90)
    assert (clock.wall() - before).total_seconds() == 90


async def test_sleep_wakes_only_after_advance() -> None:
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(10))
    await clock.step(0)
    assert not task.done()
    await clock.step(9.9)
    assert not task.done()
    await clock.step(0.1)
    assert task.done()


async def test_cancelled_sleep_leaves_no_live_timer() -> None:
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(10))
    await clock.step(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.pending == 0


async def test_wait_event_times_out_on_the_fake_clock() -> None:
    clock = FakeClock()
    event = asyncio.Event()
    waiter = asyncio.create_task(wait_event(event, 5, clock=clock))
    await clock.step(0)  # let the waiter start its sleep
    await clock.step(4)
    assert not waiter.done()
    await clock.step(1)
    assert await asyncio.wait_for(waiter, 5) is False
    event.set()
    assert await wait_event(event, 5, clock=clock) is True
