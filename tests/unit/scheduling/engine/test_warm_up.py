"""`warm_up` loads the LP solver without the numpy and scipy submodules it never uses."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
from karpy.scheduling.engine import warm_up
from karpy.scheduling.engine.lp import Column, DemandGroup, solve_cover

warm_up()
DEFERRED = ("numpy.char", "numpy.f2py", "numpy.ma", "numpy.testing", "scipy.spatial")
print(sorted(n for n in DEFERRED if n in sys.modules))
print(sorted({type(sys.modules[n]).__name__ for n in DEFERRED}))
sol = solve_cover([Column(1.0, (4,)), Column(3.0, (16,))], [DemandGroup((8,), (0, 1))])
print(round(sol.value, 6))
from numpy.testing import assert_equal  # loaded on first use
assert_equal(1, 1)
import numpy
print(int(numpy.ma.masked_array([1, 2], mask=[0, 1]).sum()), numpy.char.upper("a"))
from scipy.spatial.distance import cityblock
print(int(cityblock([0, 0], [1, 2])))
print([type(sys.modules[n]).__name__ for n in DEFERRED if n != "numpy.f2py"])
"""


def test_warm_up_defers_unused_submodules_and_the_solver_still_works() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert out[0] == "['numpy.char', 'numpy.f2py', 'numpy.ma', 'numpy.testing', 'scipy.spatial']"
    assert out[1] == "['_LazyModule']"
    assert out[2] == "1.5"  # half of the 16-unit column covers the 8 units
    assert out[3] == "1 A"  # masked arrays and string functions load when first used
    assert out[4] == "3"  # and scipy's spatial algorithms
    assert out[5] == "['module', 'module', 'module', 'module']"  # each loaded on first use
