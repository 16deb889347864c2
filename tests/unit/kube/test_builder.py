"""The builder: what a reconciler's `setup` declares is what its controller does."""

from __future__ import annotations

import asyncio
from typing import Any

from karpy.kube.builder import Builder, Enqueuer, build, singleton
from karpy.kube.clock import Clock, FakeClock
from karpy.kube.controller import Result


class Loop:
    """A singleton that records its keys; `extra` is a handle others add keys through."""

    name = "unit.loop"

    def __init__(self, clock: Clock, extra: Enqueuer[str]) -> None:
        self.clock = clock
        self.extra = extra
        self.seen: list[str] = []

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder).leader_only(False).log_kind("Thing")
        builder.enqueuer(self.extra)

    async def reconcile(self, key: str) -> Result | None:
        self.seen.append(key)
        return None


async def test_build_follows_setup_and_binds_enqueuers() -> None:
    clock = FakeClock()
    extra = Enqueuer[str]()
    extra.add("early")  # before the controller exists: queued when it is built
    loop = Loop(clock, extra)
    controller = build(loop)
    assert controller.name == "unit.loop" and controller.clock is clock
    assert controller.workers == 1 and controller.initial_keys == ("unit.loop",)
    assert controller.needs_leader_election is False and controller.log_kind == "Thing"
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    for _ in range(100):
        if len(loop.seen) == 2:
            break
        await clock.step(0.01)
    extra.add("late")
    for _ in range(100):
        if len(loop.seen) == 3:
            break
        await clock.step(0.01)
    stop.set()
    await task
    assert sorted(loop.seen[:2]) == ["early", "unit.loop"] and loop.seen[2] == "late"


class FakeInformer:
    """Only what a watch needs: the handler it is given."""

    def __init__(self) -> None:
        self.handlers: list[Any] = []

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)


class Changes:
    name = "unit.changes"

    def __init__(self, informer: FakeInformer) -> None:
        self.clock = FakeClock()
        self.informer = informer

    def setup(self, builder: Builder[str]) -> None:
        builder.watches_changes(
            self.informer,  # type: ignore[arg-type]
            lambda old, new: None if old is None else f"{(new or old)['n']}:{new is None}",
        )
        builder.watches(
            self.informer,  # type: ignore[arg-type]
            mapper=lambda obj: [obj["n"], obj["n"] + "-2"],
            predicate=lambda obj: obj["n"] != "skip",
        ).workers(3)

        self.seen: list[str] = []

    async def reconcile(self, key: str) -> Result | None:
        self.seen.append(key)
        return None


async def test_watches_map_events_to_keys() -> None:
    informer = FakeInformer()
    changes = Changes(informer)
    controller = build(changes)
    assert controller.workers == 3 and controller.needs_leader_election is True
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    await changes.clock.step(0.01)  # the controller attaches its handlers as it starts
    assert len(informer.handlers) == 2
    on_change, on_object = informer.handlers
    on_change.on_add({"n": "a"})  # a first sighting is not a change
    on_change.on_update({"n": "a"}, {"n": "b"})
    on_change.on_delete({"n": "c"})
    on_object.on_add({"n": "skip"})
    on_object.on_add({"n": "d"})
    for _ in range(100):
        if len(changes.seen) == 4:
            break
        await changes.clock.step(0.01)
    stop.set()
    await task
    assert sorted(changes.seen) == ["b:False", "c:True", "d", "d-2"]


class Waiter:
    """A singleton whose reconcile waits, then records whether its controller was stopping."""

    name = "unit.waiter"

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.stopping_after_wait: list[bool] = []
        self.handle = Enqueuer[str]()

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder).leader_only(False)
        builder.enqueuer(self.handle)

    async def reconcile(self, key: str) -> Result | None:
        self.entered.set()
        await self.release.wait()
        self.stopping_after_wait.append(self.handle.stopping)
        return None


async def test_an_in_flight_reconcile_sees_its_controller_stopping() -> None:
    waiter = Waiter(FakeClock())
    controller = build(waiter)
    assert waiter.handle.stopping is False
    stop = asyncio.Event()
    running = asyncio.create_task(controller.start(stop))
    await asyncio.wait_for(waiter.entered.wait(), 5)
    stop.set()
    await asyncio.sleep(0)
    waiter.release.set()
    await asyncio.wait_for(running, 5)
    assert waiter.stopping_after_wait == [True]
