"""Linear and mixed-integer programs solved by HiGHS through its own Python binding, `highspy`.

The engine's LPs (the covering bound) and MILPs (exact planning) are small and many, and a
one-shot `karpy simulate` pays every import at start-up: `highspy` loads in about 25 ms, where
the same solver reached through `scipy.optimize` costs 0.2-0.5 s of imports. Models are given
as coordinate triplets (row, column, value) with bounds on rows and columns, the form the
engine builds them in; the result says what ended the search in the engine's terms (`status`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["INFEASIBLE", "LIMIT", "OPTIMAL", "OTHER", "Result", "Triplets", "solve"]

OPTIMAL = 0
LIMIT = 1
"""A time, node or iteration limit ended the search; `x` holds the best plan found, if any."""
INFEASIBLE = 2
OTHER = 4


@dataclass(frozen=True)
class Triplets:
    """A sparse matrix as parallel lists: entry i is `vals[i]` at (`rows[i]`, `cols[i]`);
    repeated positions add up."""

    rows: Sequence[int]
    cols: Sequence[int]
    vals: Sequence[float]
    shape: tuple[int, int]


@dataclass(frozen=True)
class Result:
    status: int
    """OPTIMAL, LIMIT, INFEASIBLE (never unbounded: the engine's costs are non-negative and
    its columns bounded below) or OTHER."""
    message: str
    x: np.ndarray | None
    """Column values of the optimum, or of the best plan a limit stopped at; None without."""
    fun: float
    """The objective at `x` (0 without one)."""
    dual_bound: float
    """For a MILP, HiGHS's proven lower bound on the optimum (0 when it has none)."""
    row_duals: np.ndarray | None
    """For an LP solved to optimality, the objective's rate of change per unit of each row's
    active bound (negative for a binding upper bound of a minimisation)."""


def solve(
    cost: Sequence[float] | np.ndarray,
    matrix: Triplets,
    row_lower: Sequence[float],
    row_upper: Sequence[float],
    col_lower: Sequence[float] | np.ndarray,
    col_upper: Sequence[float] | np.ndarray,
    *,
    integral: bool = False,
    time_limit: float | None = None,
    mip_rel_gap: float | None = None,
    node_limit: int | None = None,
) -> Result:
    """Minimise `cost @ x` subject to `row_lower <= A x <= row_upper` and the column bounds
    (infinite bounds as `math.inf`); every column integral when `integral`."""
    import highspy

    n_rows, n_cols = matrix.shape
    lp = highspy.HighsLp()
    lp.num_col_ = n_cols
    lp.num_row_ = n_rows
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_ = _finite(col_lower, highspy.kHighsInf)
    lp.col_upper_ = _finite(col_upper, highspy.kHighsInf)
    lp.row_lower_ = _finite(row_lower, highspy.kHighsInf)
    lp.row_upper_ = _finite(row_upper, highspy.kHighsInf)
    start, index, value = _row_wise(matrix)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_row_ = n_rows
    lp.a_matrix_.num_col_ = n_cols
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    if integral:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * n_cols
    # the binding's own class: `highspy.Highs` prints HiGHS's banner on standard output when it
    # is made, before any option can silence it, and `karpy simulate` writes its plan there
    h = highspy._core._Highs()
    h.setOptionValue("output_flag", False)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if mip_rel_gap is not None:
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(node_limit))
    h.passModel(lp)
    h.run()
    return _result(h, highspy, integral)


def _finite(values: Sequence[float] | np.ndarray, inf: float) -> np.ndarray:
    """`values` with infinities as HiGHS spells them."""
    out = np.asarray(values, dtype=np.float64).copy()
    out[out == math.inf] = inf
    out[out == -math.inf] = -inf
    return out


def _row_wise(matrix: Triplets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compressed rows (start, index, value), entries at one position summed: HiGHS refuses
    repeated indices in a row."""
    n_rows, n_cols = matrix.shape
    rows = np.asarray(matrix.rows, dtype=np.int64)
    cols = np.asarray(matrix.cols, dtype=np.int64)
    vals = np.asarray(matrix.vals, dtype=np.float64)
    keys = rows * max(n_cols, 1) + cols
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    if len(keys) > 1 and bool((keys[1:] == keys[:-1]).any()):
        keys, first = np.unique(keys, return_index=True)
        vals = np.add.reduceat(vals, first)
    rows = keys // max(n_cols, 1)
    start = np.searchsorted(rows, np.arange(n_rows + 1), side="left").astype(np.int32)
    return start, (keys % max(n_cols, 1)).astype(np.int32), vals


def _result(h: Any, highspy: Any, integral: bool) -> Result:
    status = h.getModelStatus()
    kinds = highspy.HighsModelStatus
    message = h.modelStatusToString(status)
    if status == kinds.kOptimal:
        code = OPTIMAL
    elif status in (kinds.kInfeasible, kinds.kUnboundedOrInfeasible, kinds.kUnbounded):
        code = INFEASIBLE
    elif status in (kinds.kTimeLimit, kinds.kIterationLimit, kinds.kSolutionLimit):
        code = LIMIT
        if status != kinds.kTimeLimit:
            message = "node limit reached"  # the engine sets no other MIP limit
    else:
        code = OTHER
    info = h.getInfo()
    found = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    feasible = code == OPTIMAL or (code == LIMIT and found)
    solution = h.getSolution() if feasible else None
    x = np.asarray(solution.col_value, dtype=np.float64) if solution is not None else None
    duals = None
    if solution is not None and not integral and code == OPTIMAL and solution.dual_valid:
        duals = np.asarray(solution.row_dual, dtype=np.float64)
    bound = float(info.mip_dual_bound) if integral else 0.0
    if not math.isfinite(bound):
        bound = 0.0
    return Result(
        status=code,
        message=message,
        x=x,
        fun=float(info.objective_function_value) if x is not None else 0.0,
        dual_bound=bound,
        row_duals=duals,
    )
