"""The latest result of every benchmark case, kept in `tests/bench/results.jsonl`.

`make bench` prints one JSON object per case and records it here too: one line per
(bench, case), the latest run replacing the earlier line of the same case in place, so the
file stays in a stable order and its diff shows what a run changed. Each line carries where it
was measured under `measured`: the date (UTC), the git commit (`dirty` when the worktree had
uncommitted changes), the machine (cores, CPU model, Python) and the load average.

A case that failed (its object has an `error`) is printed but not recorded: the last good
figures stay. `BENCH_RECORD=0` runs without recording (an experiment on a busy machine).

Lines seeded from the hand-written page that preceded this file have `measured.source` set to
`"page"`: their `commit` is the commit that wrote the figures into the documentation, `date` is
set only where the page gave one, `runs` counts runs when the page gave a range over several,
and such ranges are `[low, high]` lists.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

Line = dict[str, Any]

RESULTS = Path(__file__).with_name("results.jsonl")
REPO = Path(__file__).resolve().parents[2]


def key(line: Mapping[str, Any]) -> tuple[str, str]:
    """What identifies a case across runs: its bench module and its case name."""
    return str(line["bench"]), str(line["case"])


def load(path: Path = RESULTS) -> list[Line]:
    if not path.exists():
        return []
    lines: list[Line] = []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        line = json.loads(text)
        if not isinstance(line, dict) or "bench" not in line or "case" not in line:
            raise ValueError(f"{path}:{number}: not a result line with a bench and a case")
        lines.append(line)
    return lines


def dump(lines: Iterable[Mapping[str, Any]], path: Path = RESULTS) -> None:
    """Write the lines atomically, so an interrupted bench never leaves half a file."""
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def merge(lines: list[Line], line: Line) -> list[Line]:
    """`lines` with `line` in place of the same case's line; a new case goes after the last line
    of its bench (or at the end for a new bench)."""
    out = list(lines)
    for i, old in enumerate(out):
        if key(old) == key(line):
            out[i] = line
            return out
    last = max((i for i, old in enumerate(out) if old["bench"] == line["bench"]), default=None)
    out.insert(len(out) if last is None else last + 1, line)
    return out


def _cpu_model() -> str:
    try:
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = text.partition(":")
            if name.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
    }


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def measurement() -> dict[str, Any]:
    """Where and when a result is being measured: taken as the result is recorded."""
    commit = _git("rev-parse", "--short=12", "HEAD")
    # the results file and the page rendered from it change with every run: not local changes
    changes = _git(
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        f":!{RESULTS.relative_to(REPO)}",
        ":!docs/development/benchmarks.md",
    )
    return {
        "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
        "commit": commit,
        "dirty": bool(changes),
        "machine": machine(),
        "loadAverage": [round(x, 1) for x in os.getloadavg()],
    }


def record(
    result: Mapping[str, Any],
    path: Path = RESULTS,
    measured: Mapping[str, Any] | None = None,
) -> bool:
    """Record one case's result (with its `bench` and `case`); False when it is not recorded
    because the case failed."""
    if "error" in result:
        return False
    line: Line = {**result, "measured": dict(measured if measured is not None else measurement())}
    dump(merge(load(path), line), path)
    return True


def recording() -> bool:
    return os.environ.get("BENCH_RECORD", "1") not in ("0", "false", "no")
