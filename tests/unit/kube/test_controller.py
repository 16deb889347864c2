"""Controllers: outcomes of a reconcile drive the queue; nothing a reconcile does kills a worker."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from prometheus_client import generate_latest

from karpy.kube import metrics
from karpy.kube.clock import FakeClock
from karpy.kube.controller import Controller, EnqueueHandler, Result, TerminalError
from karpy.kube.ratelimit import ItemExponentialFailureRateLimiter
from karpy.kube.workqueue import RateLimitingQueue


def sample(metric: str, **labels: str) -> float:
    value = metrics.REGISTRY.get_sample_value(metric, labels)
    return value or 0.0


async def run_until(stop: asyncio.Event, condition: object, clock: FakeClock | None = None) -> None:
    for _ in range(2000):
        if callable(condition) and condition():
            return
        if clock is not None:
            await clock.step(0.001)
        else:
            await asyncio.sleep(0.001)
    raise AssertionError("condition never became true")


async def test_requeue_after_backoff_and_terminal_errors() -> None:
    clock = FakeClock()
    calls: Counter[str] = Counter()

    async def reconcile(key: str) -> Result | None:
        calls[key] += 1
        if key == "later":
            return Result(requeue_after=30) if calls[key] == 1 else None
        if key == "flaky" and calls[key] <= 3:
            raise RuntimeError("transient")
        if key == "hopeless":
            raise TerminalError("bad spec")
        return None

    controller = Controller[str](
        name="unit-outcomes",
        reconcile=reconcile,
        workers=2,
        clock=clock,
        rate_limiter=ItemExponentialFailureRateLimiter[str](base=1, max_delay=100),
        initial_keys=["later", "flaky", "hopeless", "fine"],
    )
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    await run_until(stop, lambda: calls["fine"] == 1 and calls["hopeless"] == 1, clock)
    assert calls["later"] == 1 and calls["flaky"] == 1
    await clock.step(1)  # first retry of "flaky" after 1 s
    await run_until(stop, lambda: calls["flaky"] == 2, clock)
    await clock.step(2)  # then 2 s
    await run_until(stop, lambda: calls["flaky"] == 3, clock)
    await clock.step(4)  # then 4 s, and it succeeds
    await run_until(stop, lambda: calls["flaky"] == 4, clock)
    assert controller.queue.num_requeues("flaky") == 0  # forgotten after success
    await clock.step(30)
    await run_until(stop, lambda: calls["later"] == 2, clock)
    await clock.step(500)
    await asyncio.sleep(0.01)
    assert calls["hopeless"] == 1  # terminal: never retried
    assert calls["later"] == 2 and calls["flaky"] == 4 and calls["fine"] == 1
    stop.set()
    await asyncio.wait_for(task, 2)
    assert (
        sample("controller_runtime_reconcile_total", controller="unit-outcomes", result="error")
        == 4
    )
    assert (
        sample("controller_runtime_terminal_reconcile_errors_total", controller="unit-outcomes")
        == 1
    )
    assert (
        sample(
            "controller_runtime_reconcile_total", controller="unit-outcomes", result="requeue_after"
        )
        == 1
    )
    assert sample("workqueue_retries_total", name="unit-outcomes", controller="unit-outcomes") == 3
    assert sample("controller_runtime_max_concurrent_reconciles", controller="unit-outcomes") == 2


async def test_unexpected_exceptions_never_kill_workers() -> None:
    handled: list[str] = []

    async def reconcile(key: str) -> None:
        if key.startswith("boom"):
            raise KeyError(key)
        handled.append(key)

    controller = Controller[str](
        name="unit-survive",
        reconcile=reconcile,
        workers=1,
        rate_limiter=ItemExponentialFailureRateLimiter[str](base=100, max_delay=100),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    for i in range(5):
        controller.enqueue(f"boom-{i}")
        controller.enqueue(f"ok-{i}")
    await run_until(stop, lambda: len(handled) == 5)
    assert handled == [f"ok-{i}" for i in range(5)]
    stop.set()
    await asyncio.wait_for(task, 2)


async def test_stop_waits_for_in_flight_reconcile_and_takes_no_new_keys() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        started.set()
        await release.wait()
        finished.append(key)

    controller = Controller[str](name="unit-drain", reconcile=reconcile, workers=1)
    controller.enqueue("a")
    controller.enqueue("b")
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    await asyncio.wait_for(started.wait(), 2)
    stop.set()
    await asyncio.sleep(0.01)
    assert not task.done()  # "a" is still in flight
    release.set()
    await asyncio.wait_for(task, 2)
    assert finished == ["a"]  # "b" was never started


async def test_a_key_is_never_reconciled_concurrently() -> None:
    running: set[str] = set()
    overlaps: list[str] = []
    count = 0

    async def reconcile(key: str) -> None:
        nonlocal count
        if key in running:
            overlaps.append(key)
        running.add(key)
        await asyncio.sleep(0)
        count += 1
        running.discard(key)

    controller = Controller[str](name="unit-exclusive", reconcile=reconcile, workers=8)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    for _ in range(200):
        for key in "abc":
            controller.enqueue(key)
        await asyncio.sleep(0)
    await run_until(stop, lambda: len(controller.queue) == 0 and not controller.queue.processing)
    stop.set()
    await asyncio.wait_for(task, 2)
    assert not overlaps and count >= 3


def test_enqueue_handler_maps_and_filters() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue()
    handler = EnqueueHandler(
        queue,
        mapper=lambda o: [f"node/{o['spec']['nodeName']}"] if o["spec"].get("nodeName") else None,
        predicate=lambda o: o["metadata"]["name"] != "ignored",
    )
    handler.on_add({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}})
    handler.on_update({}, {"metadata": {"name": "q"}, "spec": {"nodeName": "n1"}})
    handler.on_delete({"metadata": {"name": "r"}, "spec": {"nodeName": "n2"}})
    handler.on_add({"metadata": {"name": "ignored"}, "spec": {"nodeName": "n3"}})
    handler.on_add({"metadata": {"name": "unbound"}, "spec": {}})
    assert len(queue) == 2


def test_metrics_use_controller_runtime_names() -> None:
    text = generate_latest(metrics.REGISTRY).decode()
    for name in (
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "karpy_event_loop_lag_seconds",
    ):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name


def test_workers_must_be_positive() -> None:
    async def reconcile(key: str) -> None:
        return None

    with pytest.raises(ValueError, match="workers"):
        Controller[str](name="x", reconcile=reconcile, workers=0)
