"""`warm_up` loads the LP solver without the numpy submodules scipy copies but never uses."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
from karpy.scheduling.engine import warm_up
from karpy.scheduling.engine.lp import Column, DemandGroup, solve_cover

warm_up()
print(sorted(n for n in ("numpy.f2py", "numpy.testing") if n in sys.modules))
print([type(sys.modules[n]).__name__ for n in ("numpy.f2py", "numpy.testing")])
sol = solve_cover([Column(1.0, (4,)), Column(3.0, (16,))], [DemandGroup((8,), (0, 1))])
print(round(sol.value, 6))
from numpy.testing import assert_equal  # loaded on first use
assert_equal(1, 1)
print(type(sys.modules["numpy.testing"]).__name__)
"""


def test_warm_up_defers_unused_numpy_submodules_and_the_solver_still_works() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert out[0] == "['numpy.f2py', 'numpy.testing']"
    assert out[1] == "['_LazyModule', '_LazyModule']"
    assert out[2] == "1.5"  # half of the 16-unit column covers the 8 units
    assert out[3] == "module"
