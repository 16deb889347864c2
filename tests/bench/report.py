"""Render the latest benchmark results (`tests/bench/results.jsonl`) into the benchmarks page.

The page keeps its prose by hand (what each case measures, its target, Karpenter's published
figure); each table of results sits between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`
and is rewritten from the results file, one table per `TABLES` entry:

    python -m tests.bench.report            # rewrite docs/development/benchmarks.md
    python -m tests.bench.report --check    # exit 1 (with a diff) when the page is stale

`make generate` and `make check-generated` run these. A result of a bench no table shows, a
marker without a table or a table without a marker is an error, so no figure goes unseen.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench import results

PAGE = results.REPO / "docs/development/benchmarks.md"
MARKER = re.compile(r"<!-- bench:([a-z0-9-]+) -->\n.*?<!-- /bench:\1 -->", re.DOTALL)

Line = Mapping[str, Any]
Cell = Callable[[Line], str]


def value(line: Line, path: str) -> Any:
    """`line[a][b]` for the path `a.b`; None when any part is missing."""
    out: Any = line
    for part in path.split("."):
        if not isinstance(out, Mapping) or part not in out:
            return None
        out = out[part]
    return out


def number(x: Any, digits: int | None = None, scale: float = 1.0) -> str:
    """A figure as the page prints it: integers with thousands separators, floats to `digits`
    places, a `[low, high]` range (seeded from several runs) as `low-high`, nothing for None."""
    if x is None:
        return ""
    if isinstance(x, list):
        return "-".join(number(v, digits, scale) for v in x)
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not isinstance(x, int | float):
        return str(x)
    if scale != 1.0:
        x = x * scale
    if digits is None:
        return f"{x:,}" if isinstance(x, int) else f"{x:,.2f}"
    if digits == 0:
        return f"{round(x):,}"
    return f"{x:.{digits}f}"


def num(path: str, digits: int | None = None, scale: float = 1.0) -> Cell:
    return lambda line: number(value(line, path), digits, scale)


def pct(path: str, digits: int = 1) -> Cell:
    return lambda line: (
        number(value(line, path), digits, 100.0) + "%" if value(line, path) is not None else ""
    )


def says(*pieces: tuple[str, Cell]) -> Cell:
    """A phrase of figures: each template gets its figure, templates of missing figures drop."""

    def cell(line: Line) -> str:
        return "".join(t.format(c(line)) for t, c in pieces if c(line)).strip()

    return cell


def pair(a: Cell, b: Cell, sep: str = " / ") -> Cell:
    """Two figures in one cell; a missing one shows as `?`."""
    return lambda line: f"{a(line) or '?'}{sep}{b(line) or '?'}" if a(line) or b(line) else ""


@dataclass(frozen=True)
class Rows:
    """One row per case of a bench (those `cases` accepts), one column per figure."""

    name: str
    bench: str
    columns: Sequence[tuple[str, Cell]]
    cases: Callable[[str], bool] = lambda _case: True

    def lines(self, lines: Sequence[Line]) -> list[Line]:
        return [x for x in lines if x["bench"] == self.bench and self.cases(str(x["case"]))]

    def table(self, lines: Sequence[Line], extra: Sequence[tuple[str, Cell]] = ()) -> list[str]:
        columns = [*self.columns, *extra]
        head = ["case", *(h for h, _ in columns)]
        out = [_row(head), "|---|" + "---:|" * len(columns)]
        for line in lines:
            out.append(_row([str(line["case"]), *(c(line) for _, c in columns)]))
        return out


@dataclass(frozen=True)
class Figures:
    """One case as a list of figures; `columns` names sub-objects shown side by side."""

    name: str
    bench: str
    case: str
    rows: Sequence[tuple[str, Cell]]
    columns: Sequence[tuple[str, str]] = field(default_factory=lambda: [("value", "")])

    def lines(self, lines: Sequence[Line]) -> list[Line]:
        return [x for x in lines if x["bench"] == self.bench and x["case"] == self.case]

    def table(self, lines: Sequence[Line]) -> list[str]:
        (line,) = lines
        views = [value(line, path) if path else line for _, path in self.columns]
        out = [_row(["figure", *(h for h, _ in self.columns)]), "|---|" + "---|" * len(views)]
        for label, cell in self.rows:
            cells = [cell(v) if isinstance(v, Mapping) else "" for v in views]
            if any(cells):
                out.append(_row([label, *cells]))
        return out


Table = Rows | Figures


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def describe(measured: Mapping[str, Any]) -> str:
    """Where a result was measured, in words (the load average stays in the results file: it
    differs from case to case of one run, and the benches that depend on it report it)."""
    parts = []
    date = measured.get("date")
    parts.append(str(date)[:10] if date else "date not recorded")
    commit = measured.get("commit")
    if commit:
        dirty = " with local changes" if measured.get("dirty") else ""
        written = "figures written at" if measured.get("source") == "page" else "commit"
        parts.append(f"{written} `{str(commit)[:7]}`{dirty}")
    machine = measured.get("machine") or {}
    if machine.get("cores"):
        cpu = f" ({machine['cpu']})" if machine.get("cpu") else ""
        parts.append(f"{machine['cores']} cores{cpu}")
    if machine.get("python"):
        parts.append(f"Python {machine['python']}")
    if measured.get("runs"):
        parts.append(f"{measured['runs']} runs")
    if measured.get("note"):
        parts.append(str(measured["note"]))
    return ", ".join(parts)


def block(table: Table, lines: Sequence[Line]) -> str:
    """The table's results and where they were measured: one sentence when every row was
    measured alike, else a `measured` column numbering the notes listed below the table."""
    mine = table.lines(lines)
    if not mine:
        return f"No result recorded yet: `make bench BENCH={table.bench}`."
    notes: dict[str, int] = {}
    for line in mine:
        notes.setdefault(describe(line.get("measured") or {}), len(notes) + 1)
    if len(notes) == 1:
        return "\n".join([*table.table(mine), "", f"Measured: {next(iter(notes))}."])
    assert isinstance(table, Rows), "a table of one case has one measurement"

    def note(line: Line) -> str:
        return f"({notes[describe(line.get('measured') or {})]})"

    out = table.table(mine, [("measured", note)])
    return "\n".join([*out, "", *(f"- ({n}) {text}." for text, n in notes.items())])


def render(page: str, lines: Sequence[Line], tables: Sequence[Table]) -> str:
    by_name = {t.name: t for t in tables}
    found = MARKER.findall(page)
    unknown = sorted(set(found) - set(by_name))
    missing = sorted(set(by_name) - set(found))
    if unknown or missing:
        raise ValueError(f"markers without a table: {unknown}; tables without a marker: {missing}")
    unshown = sorted({str(x["bench"]) for x in lines} - {t.bench for t in tables})
    if unshown:
        raise ValueError(f"results of benches no table shows: {unshown}")

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"<!-- bench:{name} -->\n\n{block(by_name[name], lines)}\n\n<!-- /bench:{name} -->"

    return MARKER.sub(replace, page)


def stale(path: Path, rendered: str) -> str:
    """The diff between the page on disk and the page rendered; empty when it is current."""
    current = path.read_text() if path.exists() else ""
    return "".join(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            rendered.splitlines(keepends=True),
            str(path),
            f"{path} (rendered from results.jsonl)",
        )
    )


def _existing(case: str) -> bool:
    return case.startswith("existing-")


def _new_nodes(line: Line) -> str:
    on_new = value(line, "onNew")
    nodes = number(value(line, "nodes"))
    return f"{nodes} ({number(on_new)})" if on_new else nodes


def _ms_pair(p50: str, p99: str) -> Cell:
    return pair(num(p50, 0, 1000), num(p99, 0, 1000))


TABLES: list[Table] = [
    Rows(
        "scheduling",
        "scheduling",
        [
            ("pods", num("pods")),
            ("nodes", num("nodes")),
            ("seconds", num("seconds", 2)),
            ("CPU s", num("cpuSeconds", 2)),
            ("cost $/h", num("cost", 2)),
            ("lower bound", num("lowerBound", 2)),
            ("ratio", num("ratio", 3)),
            ("peak RSS MB", num("peakRssMB", 0)),
            ("loop lag p99 ms", num("loopLagP99Ms", 0)),
        ],
        lambda case: not _existing(case),
    ),
    Rows(
        "scheduling-existing",
        "scheduling",
        [
            ("existing nodes", num("existingNodes")),
            ("bound pods", num("boundPods")),
            ("pending", num("pods")),
            ("on existing", num("onExisting")),
            ("new nodes (pods)", _new_nodes),
            ("seconds", num("seconds", 2)),
            ("CPU s", num("cpuSeconds", 2)),
            ("cost $/h", num("cost", 2)),
            ("lower bound", num("lowerBound", 2)),
            ("peak RSS MB", num("peakRssMB", 0)),
        ],
        _existing,
    ),
    Rows(
        "optimality",
        "optimality",
        [
            ("batches", num("batches")),
            ("proven optimal", pct("provenOptimal")),
            ("within 1.05x", pct("within105")),
            ("worst ratio", num("worstRatio", 4)),
            ("heuristic within 1.05x", pct("heuristicWithin105")),
            ("heuristic worst", num("heuristicWorstRatio", 2)),
            ("time-limited", num("timeLimited")),
            ("p50 / p99 ms", _ms_pair("secondsP50", "secondsP99")),
            ("CPU p50 / p99 ms", _ms_pair("cpuSecondsP50", "cpuSecondsP99")),
            ("load", num("loadAverage", 1)),
        ],
        lambda case: case.startswith("optimality-"),
    ),
    Rows(
        "optimality-repack",
        "optimality",
        [
            ("batches", num("batches")),
            ("cheaper than the heuristic", num("cheaper")),
            ("cost vs heuristic", num("costVsHeuristic", 3)),
            ("best saving", pct("bestSaving")),
            ("time-limited", num("timeLimited")),
            ("p50 / p99 ms", _ms_pair("secondsP50", "secondsP99")),
            ("CPU p50 / p99 ms", _ms_pair("cpuSecondsP50", "cpuSecondsP99")),
            ("load", num("loadAverage", 1)),
        ],
        lambda case: case.startswith("repack-"),
    ),
    Rows(
        "simulate",
        "simulate",
        [
            ("pods", num("pods")),
            ("scenario MB", num("scenarioMB", 1)),
            ("seconds", num("wallSeconds", 2)),
            ("solve s", num("solveSeconds", 2)),
            ("seconds / solve", num("wallOverSolve", 2)),
            ("CPU s", num("cpuSeconds", 2)),
            ("peak RSS MB", num("peakRssMB", 0)),
        ],
    ),
    Figures(
        "disruption-decision",
        "disruption",
        "decision-1000-nodes",
        [
            ("nodes / candidates", pair(num("nodes"), num("candidates"))),
            ("building the snapshot", says(("{} s", num("snapshot_seconds", 2)))),
            (
                "one loop decision",
                says(
                    ("{} s", num("decision_seconds", 2)),
                    (", {} s CPU", num("decision_cpu_seconds", 2)),
                ),
            ),
            (
                "every candidate evaluated on its own",
                says(
                    ("{} s wall", num("every_candidate_seconds", 2)),
                    (", {} s CPU", num("every_candidate_cpu_seconds", 2)),
                ),
            ),
            (
                "a single-node pass",
                says(
                    ("{} s", num("single_node_pass_seconds", 2)),
                    (" ({} independent commands)", num("single_node_pass_commands")),
                ),
            ),
            (
                "event-loop lag during the decision",
                says(
                    ("p99 {} ms", num("loop_lag_p99_ms", 1)),
                    (" (idle p99 {} ms)", num("loop_lag_idle_p99_ms", 1)),
                ),
            ),
        ],
    ),
    Figures(
        "disruption-converge",
        "disruption",
        "converge-1000-nodes",
        [
            ("commands", num("commands")),
            (
                "time",
                says(("{} s wall", num("seconds", 0)), (", {} s CPU", num("cpu_seconds", 0))),
            ),
            ("nodes", pair(num("nodes_before"), num("nodes_after"), " -> ")),
            ("nodes removed / replacements", pair(num("nodes_removed"), num("replacements"))),
            ("$/h", pair(num("cost_before", 2), num("cost_after", 2), " -> ")),
            ("`karpy simulate` on an empty cluster, $/h", num("simulate_cost", 2)),
            ("after / simulate", num("ratio_to_simulate", 4)),
        ],
    ),
    Figures(
        "disruption-savings",
        "disruption",
        "savings-basic-1000-to-500",
        [
            ("nodes", pair(num("nodes_before"), num("nodes_after"), " -> ")),
            ("$/h after", num("cost_after", 2)),
            ("`karpy simulate` for the remaining pods, $/h", num("simulate_cost", 2)),
            ("after / simulate", num("ratio_to_simulate", 3)),
            ("converged after the scale-down", says(("{} s", num("converge_seconds", 1)))),
        ],
    ),
    Figures(
        "e2e",
        "e2e",
        "basic-1000",
        [
            ("apply to all pods bound", says(("{} s", num("seconds", 1)))),
            ("provisioning batches", num("batches")),
            ("nodes", num("nodes")),
            ("one plan's cost, $/h", num("onePlanCostPerHour", 2)),
            ("launched cost against one plan (`costRatio`)", num("costRatio", 3)),
            ("karpy p95 resident memory", says(("{} MB", num("p95RssMB", 0)))),
            (
                "reserved cpu / memory of launched nodes",
                pair(pct("cpuUtilization"), pct("memoryUtilization")),
            ),
            ("provider launches per NodeClaim", num("createsPerNodeClaim", 0)),
        ],
    ),
    Rows(
        "kubelets",
        "kubelets",
        [
            ("nodes", num("nodes")),
            ("window s", num("seconds", 0)),
            ("longest Lease renewal gap s", num("maxRenewalGapSeconds", 1)),
            ("p99 gap s", num("p99RenewalGapSeconds", 1)),
            ("CPU of a core", pct("cpuFraction", 0)),
            ("loop lag p99 ms", num("lagP99Ms", 0)),
            ("NotReady nodes", num("notReadyNodes")),
        ],
    ),
    Rows(
        "interruption",
        "interruption",
        [
            ("handled", num("handled")),
            ("replacements", num("replacements")),
            ("offering reused", num("reusedOffering")),
            ("queue drained s", num("drainedSeconds", 1)),
            ("deletions done s", num("deletingSeconds", 1)),
            ("pods Running elsewhere s", num("seconds", 1)),
            ("CPU s: apiserver", num("cpuSeconds.kube-apiserver", 1)),
            ("moto", num("cpuSeconds.moto", 1)),
            ("karpy", num("cpuSeconds.karpy", 1)),
            ("etcd", num("cpuSeconds.etcd", 1)),
        ],
    ),
    Rows(
        "aws",
        "aws",
        [
            ("NodeClaims", num("claims")),
            ("at a time", num("concurrency")),
            ("seconds", num("launchSeconds", 1)),
            (
                "p50 / p99 s per launch",
                pair(num("p50LaunchSeconds", 2), num("p99LaunchSeconds", 2)),
            ),
            ("CreateFleet calls", num("createFleetCalls")),
            ("NodeClaims a call", num("claimsPerCreateFleet", 0)),
            ("catalogue refresh s", num("refreshSeconds", 1)),
            ("types", num("instanceTypes")),
            (
                "RSS / catalogue / peak MB",
                says(
                    ("{}", num("rssMB", 0)),
                    (" / {}", num("catalogRssMB", 0)),
                    (" / {}", num("peakRssMB", 0)),
                ),
            ),
        ],
        lambda case: case.startswith("launch-"),
    ),
    Figures(
        "aws-karpy-run",
        "aws",
        "karpy-run",
        [
            ("NodeClaims", num("nodeclaims")),
            ("seconds to all launched", num("seconds", 1)),
            ("GetInstanceTypes s", num("cloudproviderSeconds.GetInstanceTypes", 1)),
            (
                "karpy RSS idle / after launch / peak, MB",
                says(
                    ("{}", num("idleRssMB", 0)),
                    (" / {}", num("rssMB", 0)),
                    (" / {}", num("peakRssMB", 0)),
                ),
            ),
        ],
        [("aws (moto)", "aws"), ("kwok", "kwok")],
    ),
    Rows(
        "eventloop",
        "eventloop",
        [
            ("seconds", num("seconds", 1)),
            ("lag p50 ms", num("lagP50Ms", 2)),
            ("lag p99 ms", num("lagP99Ms", 2)),
            ("lag max ms", num("lagMaxMs", 2)),
            ("loop ticks/s", num("loopTicksPerSecond", 0)),
        ],
    ),
    Rows(
        "informer",
        "informer",
        [
            ("pods", num("pods")),
            ("seconds", num("seconds", 2)),
            ("pods/s", num("podsPerSecond", 0)),
            ("events/s", num("eventsPerSecond", 0)),
            ("bytes per pod", num("bytesPerPod", 0)),
            ("RSS bytes per pod", num("rssBytesPerPod", 0)),
            ("peak RSS MB", num("peakRssMB", 0)),
        ],
    ),
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.report", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when the page is stale")
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--results", type=Path, default=results.RESULTS)
    args = parser.parse_args(argv)
    page = args.page.read_text()
    rendered = render(page, results.load(args.results), TABLES)
    if args.check:
        diff = stale(args.page, rendered)
        if diff:
            sys.stdout.write(diff)
            print(f"{args.page} is stale: run make generate", file=sys.stderr)
            return 1
        return 0
    if rendered != page:
        args.page.write_text(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
