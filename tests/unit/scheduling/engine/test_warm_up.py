"""`warm_up` loads the LP solver (numpy and HiGHS's binding) and nothing of scipy, and the
solver writes nothing on standard output, where `karpy simulate` writes its plan."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
from karpy.scheduling.engine import warm_up
from karpy.scheduling.engine.lp import Column, DemandGroup, solve_cover

warm_up()
print(sorted(n for n in ("numpy", "highspy") if n in sys.modules))
sol = solve_cover([Column(1.0, (4,)), Column(3.0, (16,))], [DemandGroup((8,), (0, 1))])
print(round(sol.value, 6), [round(d, 6) for d in sol.duals[0]])
print(sorted(n for n in sys.modules if n == "scipy" or n.startswith("scipy.")))
"""


def test_warm_up_loads_highs_without_scipy_and_solving_prints_nothing_else() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert out[0] == "['highspy', 'numpy']"
    # half of the 16-unit column covers the 8 units; each unit of demand is worth 3/16
    assert out[1] == "1.5 [0.1875]"
    assert out[2] == "[]"
    assert len(out) == 3, out  # no banner or log line from the solver
