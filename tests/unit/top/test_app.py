"""The live `karpy top` view, headless with Textual's pilot: its rows and totals, a filter, a
sort, and a node added through the feed (the app's watch seam) showing up with the totals
moved. The feed here delivers chosen events; `WatchFeed` delivers the informers' through the
same sink (its test: tests/integration/disruption/test_top.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from karpy.top.app import TopApp
from karpy.top.feed import SYNCED, Sink
from karpy.top.model import ADDED, Filter
from tests.unit.top.fleet import C4_ON_DEMAND, NOW, fleet_objects, managed, worker

pytestmark = pytest.mark.timeout(120)
JSON = dict[str, Any]


class ScriptedFeed:
    """Delivers the fleet's objects, then SYNCED, then whatever the test puts in `later`."""

    def __init__(self, objects: list[tuple[str, JSON]]) -> None:
        self.objects = objects
        self.later: asyncio.Queue[tuple[str, str, JSON]] = asyncio.Queue()

    def problem(self) -> str | None:
        return None

    async def run(self, sink: Sink) -> None:
        for kind, obj in self.objects:
            sink(kind, ADDED, obj)
        sink("", SYNCED, {})
        while True:
            sink(*await self.later.get())


async def _until(
    pilot: Any,
    check: Callable[[], bool],
    what: str,
    timeout: float = 60,  # noqa: ASYNC109 - a polling deadline
) -> None:
    """Let the app run until `check` holds (a generous deadline: the machine may be busy)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def _names(app: TopApp) -> list[str]:
    table = app.query_one("#nodes", DataTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


def _pools(app: TopApp) -> dict[str, list[str]]:
    table = app.query_one("#pools", DataTable)
    return {
        str(r[0]): [str(c) for c in r]
        for r in (table.get_row_at(i) for i in range(table.row_count))
    }


def _cluster(app: TopApp) -> str:
    return str(app.query_one("#cluster", Static).content)


async def test_rows_totals_filter_and_a_node_added_through_the_feed() -> None:
    feed = ScriptedFeed(fleet_objects())
    app = TopApp(feed=feed, now=lambda: NOW)
    async with app.run_test(size=(200, 50)) as pilot:
        await _until(pilot, lambda: len(_names(app)) == 5, "the five rows")
        assert _names(app) == ["batch-a", "batch-b", "loose", "web-a", "web-b"]
        row = app.query_one("#nodes", DataTable).get_row_at(3)
        assert [str(c) for c in row[:6]] == [
            "web-a",
            "web",
            "c-4x-amd64-linux",
            "on-demand",
            "test-zone-a",
            f"{C4_ON_DEMAND:.4f}",
        ]
        assert "3/4 75%" in str(row[6]) and "█" in str(row[6])  # requested against allocatable
        assert str(row[10]) == "Ready"
        pools = _pools(app)
        assert pools["web"][1:5] == ["2", "0.3000", "219.00", "status"]
        assert _cluster(app).startswith("cluster: 5 nodes, $0.5932/h, $433.03/month")
        # the plan lower bound arrives from its worker thread
        await _until(
            pilot,
            lambda: "plan lower bound for the running pods $" in _cluster(app),
            "the lower bound",
        )

        # filter: one NodePool at a time with `p` (batch first), then all again
        await pilot.press("p")
        await _until(pilot, lambda: _names(app) == ["batch-a", "batch-b"], "batch only")
        assert list(_pools(app)) == ["batch"]
        assert _cluster(app).startswith("cluster: 2 nodes")
        await pilot.press("p", "p")
        await _until(pilot, lambda: len(_names(app)) == 5, "all NodePools again")

        # a label selector typed after `/`
        await pilot.press("slash")
        await pilot.press(*"karpenter.sh/capacity-type=spot", "enter")
        await _until(pilot, lambda: _names(app) == ["batch-a"], "the spot node only")
        app.filter = Filter()

        # `u`: nodes used less than 25 %
        await pilot.press("u")
        await _until(
            pilot, lambda: _names(app) == ["batch-b", "loose", "web-b"], "the underused nodes"
        )
        app.filter = Filter()

        # sort by cost: dearest first, the spot node last
        app.sort = "cost"
        await _until(
            pilot, lambda: len(_names(app)) == 5 and _names(app)[-1] == "batch-a", "cost order"
        )

        # a node appears on the watch, with a pod on it
        for kind, obj in [*managed("web-c", "web", zone="test-zone-c"), worker("w9", "1", "web-c")]:
            await feed.later.put((kind, ADDED, obj))
        await _until(pilot, lambda: "web-c" in _names(app), "the new node")
        row = app.query_one("#nodes", DataTable).get_row("kwok://web-c")  # rows by providerID
        assert "1/4 25%" in str(row[6]) and str(row[8]) == "1"
        # web's status.cost no longer covers a node it did not count: it is still karpy's
        # figure (status), and the cluster has six nodes
        await _until(pilot, lambda: _cluster(app).startswith("cluster: 6 nodes"), "six nodes")
        assert _pools(app)["web"][1] == "3"
