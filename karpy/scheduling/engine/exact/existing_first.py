"""Existing nodes before new ones, in an exact plan as in the heuristic's.

Karpenter places a pod on a new node only when no existing node has room for it. The solver is
indifferent between plans of equal price, and a solve cut by its limits returns whatever
incumbent it holds, so an exact plan may buy room for a pod an existing node could take. This
pass moves such pods onto existing nodes under the same rules the model applies to them
(admission, room, pods per node, classes that may not share a node); the price never rises.
Pods under a zonal spread stay where the solution counted them.
"""

from __future__ import annotations

import numpy as np

from karpy.scheduling.engine.exact.milp import Solution
from karpy.scheduling.engine.exact.problem import Problem

__all__ = ["existing_first"]


def existing_first(problem: Problem, sol: Solution) -> Solution:
    """`sol` with every pod that fits on an existing node moved there; emptied nodes dropped."""
    classes = problem.classes
    free = np.array(problem.cluster.free, dtype=np.int64)
    existing = {e: dict(counts) for e, counts in sol.existing.items()}
    for e, counts in existing.items():
        for ci, n in counts.items():
            free[e] -= np.array(classes[ci].vec, dtype=np.int64) * n
    nodes = [(option, dict(fill)) for option, fill in sol.nodes]
    moved = False
    for _, fill in nodes:
        for ci in sorted(fill):
            cls = classes[ci]
            if cls.zonal is not None:
                continue
            vec = np.array(cls.vec, dtype=np.int64)
            cap = min(len(cls.pods), cls.per_node)
            for e, ok in enumerate(problem.existing_ok):
                if not fill.get(ci) or ci not in ok:
                    continue
                here = existing.get(e, {})
                if any(here.get(other) for other in cls.clash):
                    continue
                fits = int(fill[ci])
                fits = min(fits, cap - here.get(ci, 0))
                for d, v in enumerate(vec):
                    if v > 0:
                        fits = min(fits, int(free[e, d] // v))
                if fits <= 0:
                    continue
                existing.setdefault(e, {})[ci] = here.get(ci, 0) + fits
                free[e] -= vec * fits
                fill[ci] -= fits
                moved = True
            if fill.get(ci) == 0:
                del fill[ci]
    if not moved:
        return sol
    kept = [(option, fill) for option, fill in nodes if fill]
    return Solution(kept, existing, sol.optimal, sol.bound, sol.status)
