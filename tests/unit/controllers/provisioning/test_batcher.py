"""The provisioning batch window (idle 1 s, max 10 s by default), on a fake clock."""

from __future__ import annotations

import asyncio

from karpy.controllers.provisioning.batcher import Batcher
from karpy.kube.clock import FakeClock


async def _run(clock: FakeClock, batcher: Batcher) -> asyncio.Task[bool]:
    task = asyncio.create_task(batcher.wait())
    await clock.step()
    return task


async def test_nothing_triggered_returns_false_after_a_second() -> None:
    clock = FakeClock()
    batcher = Batcher(idle=1.0, maximum=10.0, clock=clock)
    task = await _run(clock, batcher)
    await clock.step(0.9)
    assert not task.done()
    await clock.step(0.2)
    assert task.done() and task.result() is False


async def test_window_closes_after_idle() -> None:
    clock = FakeClock()
    batcher = Batcher(idle=1.0, maximum=10.0, clock=clock)
    batcher.trigger("a")
    task = await _run(clock, batcher)
    await clock.step(0.5)
    batcher.trigger("b")  # extends the window
    await clock.step()
    await clock.step(0.9)
    assert not task.done()
    await clock.step(0.2)
    assert task.done() and task.result() is True
    assert batcher.pending == 0


async def test_window_never_exceeds_the_maximum() -> None:
    clock = FakeClock()
    batcher = Batcher(idle=1.0, maximum=3.0, clock=clock)
    batcher.trigger("first")
    task = await _run(clock, batcher)
    for i in range(10):
        batcher.trigger(f"pod-{i}")
        await clock.step()
        await clock.step(0.5)
        if task.done():
            break
    assert task.done() and task.result() is True
    assert clock.now() - 1000.0 <= 3.5


async def test_a_repeated_trigger_does_not_extend_the_window() -> None:
    clock = FakeClock()
    batcher = Batcher(idle=1.0, maximum=10.0, clock=clock)
    batcher.trigger("same")
    task = await _run(clock, batcher)
    await clock.step(0.6)
    batcher.trigger("same")
    await clock.step()
    await clock.step(0.5)
    assert task.done() and task.result() is True


async def test_triggers_during_provisioning_start_the_next_batch() -> None:
    clock = FakeClock()
    batcher = Batcher(idle=1.0, maximum=10.0, clock=clock)
    batcher.trigger("a")
    first = await _run(clock, batcher)
    await clock.step(1.1)
    assert first.result() is True
    batcher.trigger("a")  # seen in the previous window: a new window counts it again
    second = await _run(clock, batcher)
    await clock.step(1.1)
    assert second.done() and second.result() is True
