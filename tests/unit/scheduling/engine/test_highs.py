"""`engine.highs` against scipy's HiGHS front end, the tests' independent reference: the same
optima, row duals that prove the same bound, the same verdicts on infeasible models."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, linprog, milp  # type: ignore[import-untyped]
from scipy.sparse import coo_matrix  # type: ignore[import-untyped]

from karpy.scheduling.engine import highs


def _covering(seed: int) -> tuple[list[float], highs.Triplets, list[float], list[float]]:
    """min cost.x s.t. -A x <= -b (A x covers b), x in [0, upper]: the engine's shape."""
    rng = random.Random(seed)
    m, n = rng.randint(1, 7), rng.randint(1, 7)
    rows, cols, vals = [], [], []
    for i in range(m):
        for j in range(n):
            if rng.random() < 0.6:
                rows.append(i)
                cols.append(j)
                vals.append(-float(rng.randint(1, 9)))
    rhs = [-float(rng.randint(0, 20)) for _ in range(m)]
    cost = [rng.randint(1, 10) + rng.random() for _ in range(n)]
    upper = [rng.choice([5.0, 10.0, math.inf]) for _ in range(n)]
    return cost, highs.Triplets(rows, cols, vals, (m, n)), rhs, upper


@pytest.mark.parametrize("seed", range(60))
def test_lp_and_milp_agree_with_the_reference(seed: int) -> None:
    cost, a, rhs, upper = _covering(seed)
    m, n = a.shape
    sparse = coo_matrix((a.vals, (a.rows, a.cols)), shape=a.shape).tocsr()
    reference = linprog(
        cost,
        A_ub=sparse,
        b_ub=rhs,
        bounds=[(0, None if u == math.inf else u) for u in upper],
        method="highs",
    )
    lp = highs.solve(cost, a, [-math.inf] * m, rhs, [0.0] * n, upper)
    assert (lp.status == highs.OPTIMAL) == (reference.status == 0)
    if reference.status == 0:
        assert lp.fun == pytest.approx(reference.fun, rel=1e-7, abs=1e-9)
        assert lp.x is not None and lp.row_duals is not None
        assert float(np.dot(cost, lp.x)) == pytest.approx(lp.fun, rel=1e-7, abs=1e-9)
        # duals may differ at a degenerate optimum; the bound they prove may not
        proved = float(np.dot(rhs, lp.row_duals)) + sum(
            u * min(0.0, c - float(np.dot(sparse[:, j].toarray().ravel(), lp.row_duals)))
            for j, (c, u) in enumerate(zip(cost, upper, strict=True))
            if u != math.inf
        )
        assert proved == pytest.approx(lp.fun, rel=1e-6, abs=1e-6)
        assert (lp.row_duals <= 1e-9).all()  # binding upper bounds of a minimisation
    else:
        assert lp.status == highs.INFEASIBLE and lp.x is None
    reference_mip = milp(
        cost,
        integrality=np.ones(n),
        bounds=Bounds([0.0] * n, upper),
        constraints=LinearConstraint(sparse, [-np.inf] * m, rhs),
    )
    mip = highs.solve(cost, a, [-math.inf] * m, rhs, [0.0] * n, upper, integral=True)
    assert (mip.status == highs.OPTIMAL) == (reference_mip.status == 0)
    if reference_mip.status == 0:
        assert mip.fun == pytest.approx(reference_mip.fun, rel=1e-7, abs=1e-9)
        assert mip.x is not None and np.allclose(mip.x, np.round(mip.x))
        assert mip.dual_bound <= mip.fun + 1e-7
    if reference_mip.status == 2:
        assert mip.status == highs.INFEASIBLE


def test_entries_at_one_position_add_up() -> None:
    # 1 x + 1 x >= 4 with x free above: x = 2
    res = highs.solve(
        [1.0],
        highs.Triplets([0, 0], [0, 0], [1.0, 1.0], (1, 1)),
        [4.0],
        [math.inf],
        [0.0],
        [math.inf],
    )
    assert res.status == highs.OPTIMAL and res.x is not None
    assert res.x.tolist() == [2.0]


def test_an_infeasible_cutoff_is_infeasible_not_an_error() -> None:
    # x >= 3 and x <= 1: what exact planning sees when nothing beats the heuristic's plan
    a = highs.Triplets([0, 1], [0, 0], [1.0, 1.0], (2, 1))
    res = highs.solve([1.0], a, [3.0, -math.inf], [math.inf, 1.0], [0.0], [10.0], integral=True)
    assert res.status == highs.INFEASIBLE and res.x is None


def test_a_node_limit_stops_with_the_best_plan_found() -> None:
    # a knapsack-like covering MILP this seed makes need branching: stopped after one node
    rng = random.Random(4)
    n = 40
    weights = [rng.randint(20, 60) for _ in range(n)]
    cost = [w + rng.random() * 10 for w in weights]
    a = highs.Triplets([0] * n, list(range(n)), [float(w) for w in weights], (1, n))
    res = highs.solve(
        cost, a, [997.0], [math.inf], [0.0] * n, [1.0] * n, integral=True, node_limit=1
    )
    assert (res.status, res.message) == (highs.LIMIT, "node limit reached")
    assert res.x is not None  # the best plan found so far, feasible
    assert float(np.dot(weights, res.x)) >= 997.0 - 1e-6
    assert res.dual_bound <= res.fun
