"""The live `karpy top` view: a Textual app fed by watches.

The feed (`karpy.top.feed`) runs as a worker on the app's loop and changes the `Fleet` one
event at a time; the view is rebuilt from a copy of it at most four times a second, only when
something changed, in a worker thread, and drawn on the loop. The plan lower bound runs in a
worker thread too (`asyncio.to_thread`): a replay of every running pod can take seconds on a
large cluster, and the view keeps answering meanwhile.

Keys: `s` next sort, `r` reverse, `p` next NodePool, `/` label selector, `u` underused
(all, then under 25 %, 50 %, 75 %), `q` quit.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import io
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, Header, Input, Static

from karpy.scheduling.selectors import SelectorError
from karpy.top.estimate import WATCHED, lower_bound, price_book
from karpy.top.feed import SYNCED, Feed
from karpy.top.model import (
    SORTS,
    Filter,
    Fleet,
    FleetView,
    NodeRow,
    PriceBook,
    bar,
    parse_selector,
)
from karpy.top.table import NODE_HEADERS, POOL_HEADERS, cluster_line, node_cells, pool_cells

__all__ = ["LogLines", "TopApp"]

JSON = dict[str, Any]

REFRESH_SECONDS: Final = 0.25
"""How often the view checks whether the fleet changed (it redraws only then)."""
LOWER_BOUND_EVERY: Final = 5.0
"""Seconds at least between two lower-bound computations (pods come and go in bursts)."""
BAR_WIDTH: Final = 10


class LogLines(io.StringIO):
    """Where the informers' log lines go while the app owns the terminal: the last few are
    kept and the newest is shown under the tables."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: collections.deque[str] = collections.deque(maxlen=20)

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self.lines.append(line.strip())
        return len(text)


class TopApp(App[None]):
    """Nodes, NodePool totals and the cluster's cost, as the watches report them."""

    TITLE = "karpy top"
    CSS = """
    #nodes { height: 1fr; }
    #pools { height: auto; max-height: 12; }
    #cluster, #status { height: auto; }
    #selector { display: none; }
    #selector.shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "next_sort", "sort"),
        Binding("r", "reverse", "reverse"),
        Binding("p", "next_pool", "nodepool"),
        Binding("slash", "selector", "selector"),
        Binding("u", "underused", "underused"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        *,
        feed: Feed,
        filter: Filter | None = None,
        sort: str = "name",
        reverse: bool = False,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        prices: Callable[[set[str], set[str]], PriceBook] = price_book,
        bound: Callable[[dict[str, list[JSON]]], tuple[float | None, str | None]] = lower_bound,
        log_stream: LogLines | None = None,
    ) -> None:
        super().__init__()
        self.feed = feed
        self.fleet = Fleet()
        self.filter = filter or Filter()
        self.sort = sort
        self.reverse = reverse
        self.now = now
        self._price_book = prices
        self._bound = bound
        self.prices = PriceBook()
        self.priced: set[str] = set()
        self.priced_zones: set[str] = set()
        self._prices_requested = False
        self._prices_loaded = False
        self.synced = False
        self.lower_bound: float | None = None
        self.lower_bound_note: str | None = None
        self._bound_version = -1
        self._bound_at = 0.0
        self._bound_running = False
        self._shown: tuple[Any, ...] | None = None
        self._building = False
        self.view: FleetView | None = None
        self.logs = log_stream

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("listing the cluster...", id="status")
        yield DataTable(id="nodes", zebra_stripes=True, cursor_type="row")
        yield DataTable(id="pools", cursor_type="none")
        yield Static("", id="cluster")
        yield Input(
            placeholder="label selector, e.g. karpenter.sh/capacity-type=spot", id="selector"
        )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#nodes", DataTable).add_columns(*NODE_HEADERS)
        self.query_one("#pools", DataTable).add_columns(*POOL_HEADERS)
        self.run_worker(self._run_feed(), name="feed", group="feed")
        self.set_interval(REFRESH_SECONDS, self.refresh_view)

    # -- the feed ---------------------------------------------------------------------------------

    async def _run_feed(self) -> None:
        try:
            await self.feed.run(self.watched)
        except Exception as err:
            self.exit(return_code=1, message=f"karpy top: cannot watch the cluster: {err}")

    def watched(self, kind: str, event: str, obj: JSON) -> None:
        """The feed's sink: one watch event."""
        if event == SYNCED:
            self.synced = True
            self._shown = None
            return
        self.fleet.apply(kind, event, obj)

    # -- refreshing -------------------------------------------------------------------------------

    def refresh_view(self) -> None:
        """Rebuild the tables if the fleet, the prices, the bound or the options changed."""
        if not self.synced:
            waiting = "listing the cluster..."
            problem = self.feed.problem()
            if problem:
                waiting += f" {problem[:200]}"
            self.query_one("#status", Static).update(Text(waiting))
            return
        types, zones = self.fleet.instance_types(), self.fleet.zones()
        if not types <= self.priced or not zones <= self.priced_zones or not self._prices_requested:
            # an EC2 snapshot takes most of a second to read: once, off the loop
            self.priced |= types
            self.priced_zones |= zones
            self._prices_requested = True
            self.run_worker(
                self._load_prices(set(self.priced), set(self.priced_zones)), group="prices"
            )
        if not self._prices_loaded:
            return  # the first view waits for its prices rather than flash unpriced rows
        self._maybe_bound()
        state = (
            self.fleet.version,
            id(self.prices),
            self.lower_bound,
            self.filter,
            self.sort,
            self.reverse,
            self.feed.problem(),
        )
        if state == self._shown or self._building:
            return
        self._shown = state
        self._building = True
        self.run_worker(self._build(self.fleet.copy()), group="view")

    async def _build(self, fleet: Fleet) -> None:
        """Build the view in a worker thread (2,000 nodes of 20 pods take a few tenths of a
        second), then draw it."""
        try:
            view = await asyncio.to_thread(
                fleet.view,
                prices=self.prices,
                now=self.now(),
                filter=self.filter,
                sort=self.sort,
                reverse=self.reverse,
                lower_bound=self.lower_bound,
            )
        finally:
            self._building = False
        self.view = view
        try:
            self._draw(view)
        except NoMatches:
            return  # the app closed while the view was being built: nothing left to draw on

    async def _load_prices(self, types: set[str], zones: set[str]) -> None:
        self.prices = await asyncio.to_thread(self._price_book, types, zones)
        self._prices_loaded = True

    def _maybe_bound(self) -> None:
        version = self.fleet.pods_version
        if self._bound_running or version == self._bound_version:
            return
        if time.monotonic() - self._bound_at < LOWER_BOUND_EVERY and self._bound_version >= 0:
            return
        self._bound_running = True
        self._bound_version = version
        self._bound_at = time.monotonic()
        self.run_worker(self._compute_bound(self.fleet.listed(WATCHED)), group="bound")

    async def _compute_bound(self, listed: dict[str, list[JSON]]) -> None:
        try:
            self.lower_bound, self.lower_bound_note = await asyncio.to_thread(self._bound, listed)
        except Exception as err:  # a bug in one replay must not take the view down
            self.lower_bound, self.lower_bound_note = None, f"{type(err).__name__}: {err}"
        finally:
            self._bound_running = False

    # -- drawing ----------------------------------------------------------------------------------

    def _use_cell(self, used: int, allocatable: int, fraction: float, text: str) -> Text:
        style = "green" if fraction < 0.5 else ("yellow" if fraction < 0.85 else "red")
        cell = Text(bar(fraction, BAR_WIDTH), style=style)
        cell.append(" " + text)
        return cell

    def _row_cells(self, row: NodeRow, view: FleetView) -> list[Any]:
        cells: list[Any] = list(node_cells(row, view))
        cells[6] = self._use_cell(
            row.cpu_requested, row.cpu_allocatable, row.cpu_utilisation, cells[6]
        )
        cells[7] = self._use_cell(
            row.memory_requested, row.memory_allocatable, row.memory_utilisation, cells[7]
        )
        return cells

    def _draw(self, view: FleetView) -> None:
        nodes = self.query_one("#nodes", DataTable)
        selected = None
        if nodes.row_count and nodes.cursor_row >= 0:
            selected = nodes.coordinate_to_cell_key(nodes.cursor_coordinate).row_key.value
        nodes.clear()
        for row in view.rows:
            nodes.add_row(*self._row_cells(row, view), key=row.key)
        if selected is not None and selected in {r.key for r in view.rows}:
            nodes.move_cursor(row=nodes.get_row_index(selected))
        pools = self.query_one("#pools", DataTable)
        pools.clear()
        for pool in view.pools:
            pools.add_row(*pool_cells(pool), key=pool.nodepool or "(none)")
        line = cluster_line(view)
        if view.cluster.lower_bound is None:
            line += "; plan lower bound: " + (
                self.lower_bound_note or ("computing..." if self._bound_running else "-")
            )
        self.query_one("#cluster", Static).update(line)
        order = f"{self.sort}{' reversed' if self.reverse else ''}"
        status = f"{view.filter.describe()} · sorted by {order} · {len(view.rows)} nodes"
        problem = self.feed.problem()
        if problem:
            status += f" · {problem[:160]}"
        elif self.logs is not None and self.logs.lines:
            status += f" · {self.logs.lines[-1][:160]}"
        self.query_one("#status", Static).update(Text(status))

    # -- actions ----------------------------------------------------------------------------------

    def action_next_sort(self) -> None:
        keys = list(SORTS)
        self.sort = keys[(keys.index(self.sort) + 1) % len(keys)]
        self.refresh_view()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.refresh_view()

    def action_next_pool(self) -> None:
        """All NodePools, then each in turn."""
        names = self.fleet.nodepool_names()
        current = sorted(self.filter.nodepools)
        if not names:
            chosen: frozenset[str] = frozenset()
        elif len(current) != 1 or current[0] not in names:
            chosen = frozenset({names[0]})
        else:
            at = names.index(current[0]) + 1
            chosen = frozenset({names[at]}) if at < len(names) else frozenset()
        self.filter = dataclasses.replace(self.filter, nodepools=chosen)
        self.refresh_view()

    def action_underused(self) -> None:
        """All nodes, then those used less than 25 %, 50 %, 75 %."""
        steps = [None, 0.25, 0.5, 0.75]
        at = (
            steps.index(self.filter.utilisation_below)
            if self.filter.utilisation_below in steps
            else 0
        )
        self.filter = dataclasses.replace(
            self.filter, utilisation_below=steps[(at + 1) % len(steps)]
        )
        self.refresh_view()

    def action_selector(self) -> None:
        box = self.query_one("#selector", Input)
        box.add_class("shown")
        box.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        text = message.value.strip()
        try:
            selector = parse_selector(text) if text else None
        except SelectorError as err:
            self.query_one("#status", Static).update(Text(str(err), style="red"))
            return
        self.filter = dataclasses.replace(self.filter, selector=selector)
        message.input.remove_class("shown")
        self.query_one("#nodes", DataTable).focus()
        self.refresh_view()
