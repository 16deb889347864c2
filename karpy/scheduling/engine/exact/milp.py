"""The MILP over (node slots x purchase options), solved by HiGHS (`engine.highs`).

Variables: z[s,k] (slot s buys option k), x[c,s] (pods of class c on slot s), y[c,e] (pods of
class c on existing node e). Each slot buys at most one option and slots are used in order;
a slot holds what its option's allocatable (after DaemonSets) holds and only classes the option
admits; every pod is placed; NodePool limits cap what the slots buy. The objective is the
hourly price plus a tiny per-node epsilon (on equal cost, fewer nodes), and is cut off at the
heuristic plan's value so the search only looks for better plans.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from karpy.scheduling.engine import highs
from karpy.scheduling.engine import limits as pool_limits
from karpy.scheduling.engine.exact.problem import Option, Problem

__all__ = [
    "MAX_STEPS",
    "NODE_EPSILON",
    "NODE_LIMIT",
    "WORK_LIMITS",
    "Budget",
    "Limits",
    "Solution",
    "clock",
    "describe",
    "search",
    "solve",
]

NODE_EPSILON = 1e-6
# Relative gap at which HiGHS calls a plan optimal: far below any price difference that matters.
MIP_GAP = 1e-5
# Branch-and-bound nodes HiGHS may explore: a deterministic limit, so that on all but a heavily
# loaded machine the work done (and so the plan) does not depend on load.
NODE_LIMIT = 2_000
# Search steps listing node fillings (patterns.py), the other deterministic work limit.
MAX_STEPS = 200_000


@dataclass(frozen=True)
class Limits:
    """The deterministic work limits of one exact solve: they, not the clock, end the search on
    all but a heavily loaded machine, so the plan does not depend on load."""

    steps: int = MAX_STEPS
    nodes: int = NODE_LIMIT
    gap: float = MIP_GAP  # relative gap at which a plan counts as optimal


WORK_LIMITS = Limits()


def clock() -> float:
    """The clock the time budget runs on: this thread's CPU time. On a loaded machine wall time
    says more about the neighbours than about the work done; the planner runs in a worker
    thread, so the event loop's CPU does not count either."""
    return time.thread_time()


# HiGHS's time limit is wall time: the CPU left is converted at the rate the planner has been
# getting CPU so far, at most this many wall seconds per CPU second.
MAX_WALL_PER_CPU = 8.0
_NODES = pool_limits.NODES


@dataclass(frozen=True)
class Budget:
    """The planning time budget: CPU seconds (`clock`), from the start of the heuristic."""

    deadline: float
    cpu_start: float
    wall_start: float

    @classmethod
    def start(cls, seconds: float) -> Budget:
        now = clock()
        return cls(now + seconds, now, time.perf_counter())

    def left(self) -> float:
        return self.deadline - clock()

    def wall_limit(self, cpu: float) -> float:
        """Wall seconds for HiGHS to spend `cpu` CPU seconds at the rate seen so far."""
        used_cpu = clock() - self.cpu_start
        used_wall = time.perf_counter() - self.wall_start
        rate = used_wall / used_cpu if used_cpu > 0.005 else 1.0
        return cpu * min(MAX_WALL_PER_CPU, max(1.0, rate))


@dataclass
class Solution:
    # per used slot: the option and pods per class
    nodes: list[tuple[Option, dict[int, int]]]
    # existing node index -> pods per class
    existing: dict[int, dict[int, int]]
    optimal: bool
    bound: float  # lower bound on the price of any plan the model allows
    status: str


class _Rows:
    def __init__(self) -> None:
        self.r: list[int] = []
        self.c: list[int] = []
        self.v: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, coeffs: list[tuple[int, float]], lo: float, hi: float) -> None:
        row = len(self.lo)
        for col, val in coeffs:
            self.r.append(row)
            self.c.append(col)
            self.v.append(val)
        self.lo.append(lo)
        self.hi.append(hi)


def search(
    cost: np.ndarray,
    matrix: highs.Triplets,
    lo: list[float],
    hi: list[float],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    seconds: float,
    limits: Limits,
) -> highs.Result:
    """An integer program of exact planning under its work limits: `seconds` of wall time,
    the relative gap that counts as optimal and HiGHS's node cap."""
    return highs.solve(
        cost,
        matrix,
        lo,
        hi,
        lower,
        upper,
        integral=True,
        time_limit=seconds,
        mip_rel_gap=limits.gap,
        node_limit=limits.nodes,
    )


def describe(res: highs.Result, limits: Limits = WORK_LIMITS) -> str:
    """HiGHS's verdict, saying plainly whether a work limit or the clock ended the search."""
    message = res.message
    if res.status == highs.OPTIMAL:
        return "optimal"
    if "time limit" in message.lower():
        return "time limit reached (the plan may depend on load)"
    if "node limit" in message.lower() or "iteration" in message.lower():
        return f"node limit ({limits.nodes}) reached"
    return message


def slot_count(problem: Problem, options: list[Option], cutoff: float) -> int:
    """Enough slots for any plan cheaper than the cutoff: no more nodes than pods, and no more
    than the cutoff buys at the cheapest option's price."""
    pods = sum(len(c.pods) for c in problem.classes)
    if not options:
        return 0
    cheapest = min(o.price for o in options)
    if cheapest <= 0:
        return pods
    return max(0, min(pods, math.floor(cutoff / cheapest + 1e-9)))


def solve(
    problem: Problem,
    options: list[Option],
    cutoff: float,
    budget: Budget,
    limits: Limits = WORK_LIMITS,
) -> Solution:
    """Search for a plan cheaper than `cutoff` (the heuristic's price): build the model the
    module docstring describes, run HiGHS within the budget's time and `limits`' work, and read
    back the nodes bought and the pods placed on existing nodes. The solution carries HiGHS's
    lower bound, so a caller can report how far from optimal a plan that was cut short is;
    "infeasible under the cutoff" proves the heuristic plan is optimal."""
    classes = problem.classes
    nc, nk = len(classes), len(options)
    slots = slot_count(problem, options, cutoff)
    dims = len(problem.dims.names)
    ex_pairs = [(ci, e) for e, ok in enumerate(problem.existing_ok) for ci in sorted(ok)]
    # column layout: z (slots*nk), x (nc*slots), y (pairs)
    nz = slots * nk
    nx = nc * slots

    def z(s: int, k: int) -> int:
        return s * nk + k

    def x(c: int, s: int) -> int:
        return nz + c * slots + s

    ncol = nz + nx + len(ex_pairs)
    cost = np.zeros(ncol)
    lb = np.zeros(ncol)
    ub = np.zeros(ncol)
    for s in range(slots):
        for k, o in enumerate(options):
            cost[z(s, k)] = o.price + NODE_EPSILON
            ub[z(s, k)] = 1
    caps = [min(len(c.pods), c.per_node) for c in classes]
    for ci in range(nc):
        for s in range(slots):
            ub[x(ci, s)] = caps[ci]
    for j, (ci, _) in enumerate(ex_pairs):
        ub[nz + nx + j] = caps[ci]
    rows = _Rows()
    vecs = [c.vec for c in classes]
    for s in range(slots):
        rows.add([(z(s, k), 1.0) for k in range(nk)], 0, 1)
        if s + 1 < slots:
            rows.add(
                [(z(s, k), 1.0) for k in range(nk)] + [(z(s + 1, k), -1.0) for k in range(nk)],
                0,
                math.inf,
            )
        for d in range(dims):
            coeffs = [(x(ci, s), float(vecs[ci][d])) for ci in range(nc) if vecs[ci][d]]
            if not coeffs:
                continue
            coeffs += [(z(s, k), -float(o.alloc[d])) for k, o in enumerate(options)]
            rows.add(coeffs, -math.inf, 0)
        for ci in range(nc):
            coeffs = [(x(ci, s), 1.0)]
            coeffs += [
                (z(s, k), -float(caps[ci])) for k, o in enumerate(options) if ci in o.classes
            ]
            rows.add(coeffs, -math.inf, 0)
    for ci, c in enumerate(classes):
        coeffs = [(x(ci, s), 1.0) for s in range(slots)]
        coeffs += [(nz + nx + j, 1.0) for j, (cj, _) in enumerate(ex_pairs) if cj == ci]
        rows.add(coeffs, len(c.pods), len(c.pods))
    free = problem.cluster.free
    for e in range(len(problem.existing_ok)):
        cols = [(j, ci) for j, (ci, ee) in enumerate(ex_pairs) if ee == e]
        if not cols:
            continue
        for d in range(dims):
            coeffs = [(nz + nx + j, float(vecs[ci][d])) for j, ci in cols if vecs[ci][d]]
            if coeffs:
                rows.add(coeffs, -math.inf, float(max(0, free[e, d])))
    for pool_index, left in problem.pool_left.items():
        if left is None:
            continue
        ks = [k for k, o in enumerate(options) if o.pool.index == pool_index]
        for key, amount in left.items():
            coeffs = [
                (z(s, k), 1.0 if key == _NODES else float(options[k].capacity.get(key, 0)))
                for s in range(slots)
                for k in ks
            ]
            rows.add(coeffs, -math.inf, float(amount))
    if nz:
        rows.add([(z(s, k), cost[z(s, k)]) for s in range(slots) for k in range(nk)], 0, cutoff)
    left_s = budget.left()
    if left_s <= 0.005:
        return Solution([], {}, False, 0.0, "time limit: no time left to solve")
    res = search(
        cost,
        highs.Triplets(rows.r, rows.c, rows.v, (len(rows.lo), ncol)),
        rows.lo,
        rows.hi,
        lb,
        ub,
        seconds=budget.wall_limit(left_s),
        limits=limits,
    )
    bound = res.dual_bound
    if res.status == highs.INFEASIBLE:
        # Nothing at or under the cutoff: the heuristic's plan is as cheap as the model allows.
        return Solution([], {}, True, cutoff, "infeasible under the cutoff")
    if res.x is None:
        return Solution([], {}, False, max(0.0, bound), f"slots: {describe(res, limits)}")
    sol = np.round(res.x).astype(np.int64)
    nodes: list[tuple[Option, dict[int, int]]] = []
    for s in range(slots):
        ks = [k for k in range(nk) if sol[z(s, k)] == 1]
        if not ks:
            continue
        counts = {ci: int(sol[x(ci, s)]) for ci in range(nc) if sol[x(ci, s)] > 0}
        if counts:
            nodes.append((options[ks[0]], counts))
    existing: dict[int, dict[int, int]] = {}
    for j, (ci, e) in enumerate(ex_pairs):
        n = int(sol[nz + nx + j])
        if n > 0:
            existing.setdefault(e, {})[ci] = n
    optimal = res.status == highs.OPTIMAL
    if optimal:
        bound = max(bound, res.fun - 1e-7 * abs(res.fun))
    return Solution(nodes, existing, optimal, max(0.0, bound), f"slots: {describe(res, limits)}")
