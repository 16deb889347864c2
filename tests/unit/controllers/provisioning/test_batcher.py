"""The provisioning batch window (idle 1 s, max 10 s by default, or the `default`
SchedulingConfig's), on a fake clock."""

from __future__ import annotations

import asyncio

from karpy.apis.descriptors import SCHEDULINGCONFIGS
from karpy.controllers.provisioning import batch_window
from karpy.controllers.provisioning.batcher import Batcher
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.clock import FakeClock
from karpy.kube.transport import AiohttpTransport
from karpy.settings import Settings
from tests.kit import schedulingconfig


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


async def test_a_live_window_applies_to_the_open_batch() -> None:
    """The `default` SchedulingConfig's durations (read through `window`) apply at once: an
    open 30 s window shrinks when they are edited, without a trigger."""
    clock = FakeClock()
    current = {"window": (30.0, 60.0)}
    batcher = Batcher(idle=1.0, maximum=10.0, clock=clock, window=lambda: current["window"])
    batcher.trigger("a")
    task = await _run(clock, batcher)
    for _ in range(10):
        await clock.step(1.0)
    assert not task.done()  # 10 s into a 30 s idle window
    current["window"] = (1.0, 2.0)
    await clock.step(1.0)
    await clock.step(1.0)
    assert task.done() and task.result() is True
    assert (batcher.idle, batcher.maximum) == (1.0, 2.0)


async def test_a_live_window_is_read_for_each_batch() -> None:
    clock = FakeClock()
    current = {"window": (5.0, 10.0)}
    batcher = Batcher(idle=1.0, maximum=10.0, clock=clock, window=lambda: current["window"])
    batcher.trigger("a")
    task = await _run(clock, batcher)
    for _ in range(4):
        await clock.step(1.0)
    assert not task.done()  # the settings' 1 s would have closed it
    for _ in range(2):
        await clock.step(1.0)
    assert task.done() and task.result() is True


async def test_the_window_is_the_default_configs_else_the_settings() -> None:
    client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
    try:
        configs = Cache(client).informer(SCHEDULINGCONFIGS)
        settings = Settings(provider="kwok")
        assert batch_window(settings, configs) == (1.0, 10.0)
        configs.replace([schedulingconfig(batchIdleDuration="5s", requirements=[])], "1")
        assert batch_window(settings, configs) == (5.0, 10.0)
        configs.replace([schedulingconfig("team", batchMaxDuration="1m", requirements=[])], "2")
        assert batch_window(settings, configs) == (1.0, 10.0)  # only `default` counts
    finally:
        await client.close()
