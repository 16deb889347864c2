"""`make bench`: run every benchmark module and print one JSON object per case.

Each `tests/bench/bench_<name>.py` exposes `cases() -> Iterator[dict]`, yielding one result per
case as it finishes. `make bench BENCH=<name>[,<name>]` runs only the named modules.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
from pathlib import Path


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
            print(json.dumps({"bench": name, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
