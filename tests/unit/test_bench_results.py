"""The benchmarks page is rendered from the latest result per case: recording a case's result
replaces its earlier line, the tables show what the results file holds, and a page that differs
from its results is reported stale (as `make check-generated` does)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.bench import report, results

ROOT = Path(__file__).resolve().parents[2]

HERE = {
    "date": "2026-12-05T03:00Z",
    "commit": "0123456789ab",
    "dirty": False,
    "machine": {"cores": 2, "cpu": "AMD EPYC", "python": "3.11.9"},
}
THERE = {**HERE, "date": "2026-12-06T03:00Z", "commit": "ba9876543210"}


def _case(bench: str, case: str, **figures: Any) -> dict[str, Any]:
    return {"bench": bench, "case": case, **figures}


def _cases(path: Path) -> list[tuple[str, str, Any]]:
    return [(x["bench"], x["case"], x.get("seconds")) for x in results.load(path)]


def test_recording_replaces_the_line_of_the_same_case_in_place(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    results.record(_case("aws", "launch-500-at-50", seconds=63.4), path, HERE)
    results.record(_case("e2e", "basic-1000", seconds=20.1), path, HERE)
    results.record(_case("aws", "launch-500-at-10", seconds=68.9), path, HERE)
    assert _cases(path) == [
        ("aws", "launch-500-at-50", 63.4),
        ("aws", "launch-500-at-10", 68.9),  # after its own bench's lines
        ("e2e", "basic-1000", 20.1),
    ]

    results.record(_case("aws", "launch-500-at-50", seconds=41.0), path, THERE)

    assert _cases(path) == [
        ("aws", "launch-500-at-50", 41.0),
        ("aws", "launch-500-at-10", 68.9),
        ("e2e", "basic-1000", 20.1),
    ]
    assert len(path.read_text().splitlines()) == 3
    assert results.load(path)[0]["measured"]["commit"] == "ba9876543210"


def test_a_failed_case_keeps_its_last_good_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    results.record(_case("scheduling", "karpenter-50", seconds=0.4), path, HERE)
    before = path.read_text()
    assert not results.record(_case("scheduling", "karpenter-50", error="exit 1"), path, HERE)
    assert path.read_text() == before


def test_a_line_carries_the_date_commit_and_machine_it_was_measured_on(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    results.record(_case("eventloop", "idle", seconds=2.0), path)
    (line,) = (json.loads(x) for x in path.read_text().splitlines())
    measured = line["measured"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ", measured["date"])
    assert re.fullmatch(r"[0-9a-f]{12}", measured["commit"])
    assert measured["machine"]["cores"] == os.cpu_count()
    assert measured["machine"]["cpu"]
    assert measured["machine"]["python"]


_PAGE = """# Bench

Hand-written prose.

<!-- bench:aws -->
old table
<!-- /bench:aws -->

More prose, kept.

<!-- bench:e2e -->
<!-- /bench:e2e -->
"""

_TABLES: list[report.Table] = [
    report.Rows(
        "aws",
        "aws",
        [("seconds", report.num("launchSeconds", 1)), ("calls", report.num("createFleetCalls"))],
    ),
    report.Figures("e2e", "e2e", "basic-1000", [("bound after", report.num("seconds", 1))]),
]


def test_rendering_writes_each_table_between_its_markers_and_keeps_the_prose() -> None:
    lines = [
        {
            **_case("aws", "launch-500-at-50", launchSeconds=63.44, createFleetCalls=1900),
            "measured": HERE,
        },
        {**_case("aws", "launch-500-at-10", launchSeconds=[68.9, 70.0]), "measured": HERE},
    ]
    page = report.render(_PAGE, lines, _TABLES)

    assert "old table" not in page
    assert "Hand-written prose." in page and "More prose, kept." in page
    assert "| launch-500-at-50 | 63.4 | 1,900 |" in page
    assert "| launch-500-at-10 | 68.9-70.0 |  |" in page  # a range from several runs
    assert "Measured: 2026-12-05, commit `0123456`, 2 cores (AMD EPYC), Python 3.11.9." in page
    assert "No result recorded yet: `make bench BENCH=e2e`." in page
    # rendering again changes nothing: the markers stay where they were
    assert report.render(page, lines, _TABLES) == page


def test_rows_measured_differently_are_told_apart() -> None:
    lines = [
        {**_case("aws", "launch-500-at-50", launchSeconds=63.4), "measured": HERE},
        {**_case("aws", "launch-500-at-10", launchSeconds=68.9), "measured": THERE},
        {**_case("e2e", "basic-1000", seconds=[18.2, 23.0]), "measured": {**HERE, "runs": 6}},
    ]
    page = report.render(_PAGE, lines, _TABLES)
    assert "| launch-500-at-50 | 63.4 |  | (1) |" in page
    assert "| launch-500-at-10 | 68.9 |  | (2) |" in page
    assert "- (2) 2026-12-06, commit `ba98765`, 2 cores (AMD EPYC), Python 3.11.9." in page
    assert "| bound after | 18.2-23.0 |" in page
    assert "Python 3.11.9, 6 runs." in page


@pytest.mark.parametrize(
    ("page", "lines", "error"),
    [
        (_PAGE + "<!-- bench:gone -->\n<!-- /bench:gone -->\n", [], "markers without a table"),
        (_PAGE.replace("<!-- bench:e2e -->", ""), [], "tables without a marker"),
        (_PAGE, [_case("kubelets", "heartbeats-1000")], "benches no table shows"),
    ],
)
def test_a_figure_that_would_go_unseen_is_an_error(
    page: str, lines: list[dict[str, Any]], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        report.render(page, lines, _TABLES)


def test_a_page_that_differs_from_its_results_is_stale(tmp_path: Path) -> None:
    page, path = tmp_path / "benchmarks.md", tmp_path / "results.jsonl"
    shipped = report.PAGE.read_text()
    page.write_text(shipped)
    results.dump(results.load(), path)
    args = ["--page", str(page), "--results", str(path)]
    assert report.main([*args, "--check"]) == 0

    results.record(_case("eventloop", "idle", seconds=2.0, lagP99Ms=1.25), path, HERE)
    assert report.main([*args, "--check"]) == 1
    assert page.read_text() == shipped  # the check only reports

    assert report.main(args) == 0
    assert "| idle | 2.0 |" in page.read_text()
    assert report.main([*args, "--check"]) == 0


def test_the_shipped_page_is_rendered_from_the_shipped_results() -> None:
    page = report.PAGE.read_text()
    assert report.render(page, results.load(), report.TABLES) == page, "run make generate"


def test_every_bench_module_has_a_table_on_the_page() -> None:
    modules = {p.stem.removeprefix("bench_") for p in (ROOT / "tests/bench").glob("bench_*.py")}
    assert modules <= {t.bench for t in report.TABLES}
