"""Work queue semantics (client-go): collapse, never concurrent, re-queue once, delays, shutdown."""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.kube.clock import FakeClock
from karpy.kube.ratelimit import ItemExponentialFailureRateLimiter
from karpy.kube.workqueue import RateLimitingQueue, ShutDown, WorkQueue


async def test_duplicates_collapse_and_order_is_fifo() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ["a", "b", "a", "c", "b"]:
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]


async def test_add_while_processing_requeues_exactly_once_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = await queue.get()
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # not handed out while processing
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_get_waits_for_an_add() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("x")
    assert await asyncio.wait_for(getter, 1) == "x"


async def test_add_after_fires_on_the_clock_and_earliest_wins() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("a", 10)
    queue.add_after("a", 3)  # earlier: replaces
    queue.add_after("a", 20)  # later: ignored
    assert queue.waiting == 1
    clock.advance(2.9)
    assert len(queue) == 0
    clock.advance(0.1)
    assert len(queue) == 1 and queue.waiting == 0
    clock.advance(100)
    assert len(queue) == 1  # the later request did not fire again


async def test_rate_limited_adds_back_off_per_key_until_forgotten() -> None:
    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter[str](base=1, max_delay=8)
    )
    seen: list[float] = []
    for _ in range(5):
        queue.add_rate_limited("k")
        while not len(queue):
            clock.advance(0.5)
        seen.append(clock.now())
        await queue.get()
        queue.done("k")
    gaps = [b - a for a, b in zip([1000.0, *seen], seen, strict=False)]
    assert gaps == pytest.approx([1, 2, 4, 8, 8])
    assert queue.num_requeues("k") == 5
    queue.forget("k")
    assert queue.num_requeues("k") == 0


async def test_shutdown_stops_intake_and_wakes_getters() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add_after("later", 5)
    queue.shutdown()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(getter, 1)
    queue.add("x")
    clock.advance(10)
    assert len(queue) == 0 and queue.waiting == 0
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shutdown_with_drain_waits_for_in_flight_keys() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b")
    first = await queue.get()
    drain = asyncio.create_task(queue.shutdown_with_drain())
    await asyncio.sleep(0.01)
    assert not drain.done()
    queue.add(first)  # ignored: shutting down
    queue.done(first)
    await asyncio.wait_for(drain, 1)
    with pytest.raises(ShutDown):
        await queue.get()  # "b" was abandoned, not drained


async def test_in_flight_gauges() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(name="unit-test-gauges", clock=clock)
    queue.add("a")
    queue.add("b")
    await queue.get()
    clock.advance(2)
    await queue.get()
    clock.advance(1)
    assert queue.longest_running_processor_seconds() == pytest.approx(3)
    assert queue.unfinished_work_seconds() == pytest.approx(4)


# -- properties ------------------------------------------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 7)),
        st.tuples(st.just("tick"), st.integers(1, 5)),
    ),
    min_size=1,
    max_size=80,
)


async def _exercise(ops: list[tuple[str, int]], workers: int, seed: int) -> None:
    rng = random.Random(seed)
    queue: WorkQueue[int] = WorkQueue()
    clock = 0
    last_add: dict[int, int] = {}
    last_start: dict[int, int] = {}
    active: set[int] = set()
    violations: list[str] = []

    async def worker() -> None:
        nonlocal clock
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            clock += 1
            if key in active:
                violations.append(f"{key} processed concurrently")
            active.add(key)
            last_start[key] = clock
            for _ in range(rng.randint(0, 3)):
                await asyncio.sleep(0)
            if rng.random() < 0.2:  # reconciles sometimes re-add their own key
                clock += 1
                last_add[key] = clock
                queue.add(key)
            active.discard(key)
            queue.done(key)

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for op, value in ops:
        if op == "add":
            clock += 1
            last_add[value] = clock
            queue.add(value)
        else:
            for _ in range(value):
                await asyncio.sleep(0)
    for _ in range(10_000):  # let everything settle
        if not len(queue) and not queue.processing:
            break
        await asyncio.sleep(0)
    await queue.shutdown_with_drain()
    await asyncio.gather(*tasks)
    assert not violations, violations
    for key, added in last_add.items():
        assert last_start.get(key, -1) > added, f"key {key} added at {added} never processed after"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations, workers=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_no_key_runs_twice_at_once_and_every_add_is_processed(
    ops: list[tuple[str, int]], workers: int, seed: int
) -> None:
    asyncio.run(_exercise(ops, workers, seed))


@settings(max_examples=100, deadline=None)
@given(
    delays=st.lists(st.tuples(st.integers(0, 3), st.floats(0, 50)), min_size=1, max_size=30),
    steps=st.lists(st.floats(0.1, 20), min_size=1, max_size=20),
)
def test_delayed_adds_become_ready_exactly_at_their_earliest_time(
    delays: list[tuple[int, float]], steps: list[float]
) -> None:
    clock = FakeClock(start=0.0)

    async def scenario() -> None:
        queue: WorkQueue[int] = WorkQueue(clock=clock)
        earliest: dict[int, float] = {}
        for key, delay in delays:
            queue.add_after(key, delay)
            earliest[key] = min(earliest.get(key, float("inf")), delay)
        ready: set[int] = set()
        for step in steps:
            clock.advance(step)
            while len(queue):
                ready.add(await queue.get())
            expected = {k for k, t in earliest.items() if t <= clock.now()}
            assert ready == expected

    asyncio.run(scenario())
