"""`make bench`: run every benchmark module and print one JSON object per case.

Each `tests/bench/bench_<name>.py` exposes `cases() -> Iterator[dict]`, yielding one result per
case as it finishes. `make bench BENCH=<name>[,<name>]` runs only the named modules. Each result is
also recorded in `tests/bench/results.jsonl` (`tests/bench/results.py`; `BENCH_RECORD=0` does
not), from which `make generate` renders the benchmarks page.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
from pathlib import Path

from tests.bench import results


def main() -> int:
    wanted = {n for n in os.environ.get("BENCH", "").split(",") if n}
    here = Path(__file__).parent
    names = sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(here)])
        if m.name.startswith("bench_")
    )
    for name in names:
        if wanted and name not in wanted:
            continue
        module = importlib.import_module(f"tests.bench.bench_{name}")
        for result in module.cases():
            line = {"bench": name, **result}
            print(json.dumps(line), flush=True)
            if results.recording() and not results.record(line):
                print(f"{name}/{result.get('case')} failed: not recorded", file=sys.stderr)
    if results.recording():
        print(f"recorded in {results.RESULTS}; `make generate` renders the page", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
