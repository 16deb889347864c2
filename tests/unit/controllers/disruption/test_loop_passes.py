"""The disruption loop's pass with a method that finds several commands: one validation wait
for all of them, each dropped alone, every command that holds handed to the queue together.
Cluster state, queue and clock are stand-ins at the loop's seams (their own behaviour is tested
against the real control plane in tests/integration/disruption)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.controller import VALIDATION_DELAY, DisruptionController
from karpy.controllers.disruption.methods import Budgets, Command, ManyCommands, Method
from tests.kit import nodepool
from tests.unit.controllers.disruption.test_methods import _node


class _Cluster:
    def __init__(self, names: Sequence[str]) -> None:
        self.state = [_node(n, pods=1) for n in names]

    def synced(self) -> bool:
        return True

    def nodes(self) -> list[Any]:
        return list(self.state)

    def nodepools(self) -> list[dict[str, Any]]:
        return [nodepool("pool", consolidate_after="0s", budgets=[{"nodes": "100%"}])]


class _Queue:
    def __init__(self) -> None:
        self.started: list[Command] = []
        self.revalidate: Any = None

    def busy(self) -> frozenset[str]:
        return frozenset()

    def owns(self, _claim: Any) -> bool:
        return False

    async def start(self, command: Command) -> bool:
        self.started.append(command)
        return True


class _Clock:
    def __init__(self) -> None:
        self.slept: list[float] = []

    def now(self) -> float:
        return 0.0

    def wall(self) -> datetime:
        return datetime(2026, 12, 1, tzinfo=UTC)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


class _Pairs:
    """Finds one command per pair of candidates; validation drops those naming `broken`."""

    reason = "Underutilized"
    consolidation_type = "multi"
    needs_validation = True
    graceful = True

    def __init__(self, broken: str) -> None:
        self.broken = broken
        self.budgets: list[Budgets] = []

    def should_disrupt(self, _c: Candidate) -> bool:
        return True

    async def compute(self, candidates: Sequence[Candidate], budgets: Budgets) -> Command:
        raise AssertionError("the loop asks a ManyCommands method for all its commands")

    async def validate(self, command: Command, c: Sequence[Candidate], b: Budgets) -> Command:
        raise AssertionError("the loop validates a ManyCommands method's commands together")

    async def compute_many(
        self, candidates: Sequence[Candidate], budgets: Budgets
    ) -> list[Command]:
        self.budgets.append(budgets)
        ordered = sorted(candidates, key=lambda c: c.name)
        return [
            Command(candidates=tuple(ordered[i : i + 2]), reason=self.reason)
            for i in range(0, len(ordered) - 1, 2)
        ]

    async def validate_many(
        self, commands: Sequence[Command], c: Sequence[Candidate], b: Budgets
    ) -> list[Command]:
        return [cmd for cmd in commands if all(x.name != self.broken for x in cmd.candidates)]


def _loop(method: Method, queue: _Queue, clock: _Clock, names: list[str]) -> DisruptionController:
    """The loop over nodes `names`, with `method` alone, at its seams' stand-ins."""
    return DisruptionController(
        client=None,  # type: ignore[arg-type]
        cluster=_Cluster(names),  # type: ignore[arg-type]
        events=None,  # type: ignore[arg-type]
        clock=clock,
        methods=[method],
        queue=queue,  # type: ignore[arg-type]
    )


def test_a_pass_validates_its_commands_after_one_wait_and_starts_those_that_hold() -> None:
    method = _Pairs(broken="c")
    assert isinstance(method, Method) and isinstance(method, ManyCommands)
    queue, clock = _Queue(), _Clock()
    loop = _loop(method, queue, clock, ["a", "b", "c", "d", "e", "f"])
    assert asyncio.run(loop.run(method))
    assert clock.slept == [VALIDATION_DELAY]
    assert [[c.name for c in cmd.candidates] for cmd in queue.started] == [["a", "b"], ["e", "f"]]
    assert method.budgets == [{"pool": 6}]


def test_a_pass_whose_commands_all_fail_validation_starts_nothing() -> None:
    method = _Pairs(broken="a")
    queue, clock = _Queue(), _Clock()
    loop = _loop(method, queue, clock, ["a", "b"])
    assert not asyncio.run(loop.run(method))
    assert clock.slept == [VALIDATION_DELAY] and queue.started == []


class _FailingQueue(_Queue):
    """Refuses (raises on) the commands naming `failing`; starts the others."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    async def start(self, command: Command) -> bool:
        if any(c.name == self.failing for c in command.candidates):
            raise RuntimeError("the API server refused the mark")
        for _ in range(3):  # the other starts take longer than the failing one
            await asyncio.sleep(0)
        return await super().start(command)


def test_a_start_that_fails_raises_after_every_other_start_has_finished() -> None:
    method = _Pairs(broken="none")
    queue, clock = _FailingQueue(failing="a"), _Clock()
    loop = _loop(method, queue, clock, ["a", "b", "c", "d", "e", "f"])

    async def pass_then_pending() -> set[asyncio.Task[Any]]:
        try:
            await loop.run(method)
        except RuntimeError as error:
            assert "refused the mark" in str(error)
        else:
            raise AssertionError("the failed start was swallowed")
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert asyncio.run(pass_then_pending()) == set()
    assert [[c.name for c in cmd.candidates] for cmd in queue.started] == [["c", "d"], ["e", "f"]]
