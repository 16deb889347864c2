"""The order in which `make test` hands test files to its pytest-xdist workers: longest first.

With `--dist loadfile --no-loadscope-reorder` xdist queues the files in collection order and
gives the next file to whichever worker is free. Starting the longest files at once and letting
the short ones fill the end keeps one worker from running a four-minute file alone while the
other has finished. `WEIGHTS` holds rough seconds per file from a `--durations=0` run on two
loaded cores (refresh them when a file grows or shrinks by a lot; exact values do not matter,
only the order); a file not listed weighs `DEFAULT`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["DEFAULT", "WEIGHTS", "file_of", "order", "weight"]

T = TypeVar("T")

DEFAULT = 20.0
"""Seconds assumed for a file not in `WEIGHTS` (most unit and integration files are shorter)."""

WEIGHTS: dict[str, float] = {
    "tests/e2e/test_takeover.py": 500.0,
    "tests/e2e/test_drift_failure.py": 380.0,
    "tests/e2e/test_disruption.py": 296.0,
    "tests/e2e/test_consolidation.py": 291.0,
    "tests/e2e/test_static.py": 291.0,
    "tests/e2e/test_kubelets.py": 220.0,
    "tests/e2e/test_drift.py": 197.0,
    "tests/e2e/test_drain_order.py": 140.0,
    "tests/e2e/test_prometheus.py": 160.0,
    "tests/integration/disruption/test_explain.py": 210.0,
    "tests/integration/disruption/test_top.py": 40.0,
    "tests/e2e/test_capacitybuffer.py": 78.0,
    "tests/e2e/test_azure.py": 150.0,
    "tests/e2e/test_aws.py": 59.0,
    "tests/integration/chart/test_chart_command_azure.py": 75.0,
}
"""Seconds per test file, by path relative to the repository."""


def file_of(nodeid: str) -> str:
    """The file part of a pytest node id (`tests/e2e/test_x.py::test_y[1]` → the path)."""
    return nodeid.split("::", 1)[0]


def weight(path: str) -> float:
    return WEIGHTS.get(path, DEFAULT)


def order(items: Sequence[T], nodeid: Callable[[T], str]) -> list[T]:
    """`items` with whole files sorted by weight, heaviest first; ties keep the order the files
    were collected in, and the items of one file keep their order and stay together."""
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(file_of(nodeid(item)), len(first_seen))
    return sorted(
        items,
        key=lambda item: (-weight(f := file_of(nodeid(item))), first_seen[f]),
    )
