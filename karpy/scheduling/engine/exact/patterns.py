"""The pattern (Gilmore-Gomory) model, for batches whose node fillings are few enough to list.

A pattern is one way to fill one node: a purchase option (or an existing node) and how many
pods of each class it holds. Only maximal fillings are listed (no further pod of a class still
to place fits), and pods are covered rather than partitioned, so a plan drops surplus pods from
its nodes. The integer program picks how many nodes of each pattern to buy; its LP relaxation
is tight, so HiGHS proves small batches optimal in a few milliseconds, where the slot model
spends its time on symmetric slots.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from karpy.apis.v1.labels import LABEL_TOPOLOGY_ZONE
from karpy.scheduling.engine import highs
from karpy.scheduling.engine import limits as pool_limits
from karpy.scheduling.engine.exact.milp import (
    NODE_EPSILON,
    WORK_LIMITS,
    Budget,
    Limits,
    Solution,
    clock,
    describe,
    search,
)
from karpy.scheduling.engine.exact.problem import Option, PodClass, Problem

__all__ = ["MAX_PATTERNS", "solve_patterns"]

MAX_PATTERNS = 60_000
# Share of the time left that listing may take before the slot model gets the rest.
LIST_SHARE = 0.75
_NODES = pool_limits.NODES


class _TooMany(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _Work:
    """What listing may still spend: patterns, search steps (a deterministic work limit, see
    `milp.Limits`), and a CPU-clock stop (the backstop)."""

    def __init__(self, stop: float, steps: int) -> None:
        self.patterns = MAX_PATTERNS
        self.limit = steps
        self.steps = steps
        self.stop = stop

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise _TooMany(f"more than {self.limit} search steps")
        if not self.steps % 512 and clock() > self.stop:
            raise _TooMany("time limit")


def _fillings(
    classes: Sequence[PodClass], allowed: Sequence[int], room: Sequence[int], work: _Work
) -> Iterator[dict[int, int]]:
    """Maximal fillings of `room` with the `allowed` classes (at most their pod counts).

    Classes are chosen in turn, most pods first; a class given fewer pods than fit stays
    "open", and a branch is cut as soon as some open class would still fit even if every later
    class took all it could (and none of them clashes with it): no filling below is maximal."""
    # big pods first: fewer partial fillings that smaller pods could still grow
    order = sorted(allowed, key=lambda ci: classes[ci].vec, reverse=True)
    caps = [min(len(classes[ci].pods), classes[ci].per_node) for ci in order]
    ndim = len(room)
    most = [[0] * ndim for _ in range(len(order) + 1)]
    later_clash: list[frozenset[int]] = [frozenset()] * (len(order) + 1)
    for i in range(len(order) - 1, -1, -1):
        vec = classes[order[i]].vec
        most[i] = [most[i + 1][d] + caps[i] * vec[d] for d in range(ndim)]
        later_clash[i] = later_clash[i + 1] | classes[order[i]].clash | {order[i]}
    counts: dict[int, int] = {}
    left = list(room)
    open_: list[int] = []

    def fits(ci: int) -> bool:
        c = classes[ci]
        if counts.get(ci, 0) >= min(len(c.pods), c.per_node):
            return False
        if any(counts.get(d) for d in c.clash):
            return False
        return all(v <= f for v, f in zip(c.vec, left, strict=True))

    def doomed(i: int) -> bool:
        for u in open_:
            if u in later_clash[i] or any(d in later_clash[i] for d in classes[u].clash):
                continue
            vec = classes[u].vec
            if all(left[d] - most[i][d] >= vec[d] for d in range(ndim)):
                return True
        return False

    def walk(i: int) -> Iterator[dict[int, int]]:
        work.step()
        if doomed(i):
            return
        if i == len(order):
            if counts and not any(fits(ci) for ci in order):
                work.patterns -= 1
                if work.patterns < 0:
                    raise _TooMany(f"more than {MAX_PATTERNS} fillings")
                yield dict(counts)
            return
        ci = order[i]
        added = 0
        while fits(ci):
            counts[ci] = counts.get(ci, 0) + 1
            added += 1
            for r, v in enumerate(classes[ci].vec):
                left[r] -= v
        while True:
            reopened = added < caps[i] and fits(ci)
            if reopened:
                open_.append(ci)
            yield from walk(i + 1)
            if reopened:
                open_.pop()
            if not added:
                break
            counts[ci] -= 1
            if not counts[ci]:
                del counts[ci]
            added -= 1
            for r, v in enumerate(classes[ci].vec):
                left[r] += v

    yield from walk(0)


def solve_patterns(
    problem: Problem,
    options: list[Option],
    cutoff: float,
    budget: Budget,
    limits: Limits = WORK_LIMITS,
) -> Solution | str:
    """Solve by patterns; a string saying why when there are too many to list (use the slot
    model)."""
    classes = problem.classes
    work = _Work(clock() + budget.left() * LIST_SHARE, limits.steps)
    cols: list[tuple[Option | None, int, dict[int, int]]] = []  # (option, existing idx, fill)
    try:
        for o in options:
            for fill in _fillings(classes, sorted(o.classes), o.alloc, work):
                cols.append((o, -1, fill))
        free = problem.cluster.free
        for e, ok in enumerate(problem.existing_ok):
            if ok:
                room = [int(v) for v in free[e]]
                for fill in _fillings(classes, sorted(ok), room, work):
                    cols.append((None, e, fill))
    except _TooMany as stopped:
        return stopped.why
    n = len(cols)
    cost = np.array([o.price + NODE_EPSILON if o is not None else 0.0 for o, _, _ in cols])
    ub = np.array(
        [1.0 if o is None else float(sum(len(c.pods) for c in classes)) for o, _, _ in cols]
    )
    r: list[int] = []
    c: list[int] = []
    v: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(coeffs: list[tuple[int, float]], low: float, high: float) -> None:
        i = len(lo)
        for col, val in coeffs:
            r.append(i)
            c.append(col)
            v.append(val)
        lo.append(low)
        hi.append(high)

    for ci, cls in enumerate(classes):
        row(
            [(j, float(f[ci])) for j, (_, _, f) in enumerate(cols) if ci in f],
            len(cls.pods),
            math.inf,
        )
    by_node: dict[int, list[int]] = {}
    for j, (opt, e, _) in enumerate(cols):
        if opt is None:
            by_node.setdefault(e, []).append(j)
    for js in by_node.values():
        row([(j, 1.0) for j in js], 0, 1)
    for pool_index, left in problem.pool_left.items():
        if left is None:
            continue
        js = [j for j, (o, _, _) in enumerate(cols) if o is not None and o.pool.index == pool_index]
        for key, amount in left.items():
            row(
                [
                    (j, 1.0 if key == _NODES else float(cols[j][0].capacity.get(key, 0)))  # type: ignore[union-attr]
                    for j in js
                ],
                -math.inf,
                float(amount),
            )
    if len(lo) and not any(cols):
        return Solution([], {}, False, 0.0, "no way to place the pods")
    zones = [_zone(problem, o, e) for o, e, _ in cols]
    # zonal spreads: per class and eligible zone, pods placed there (after surplus is dropped)
    spread_at: dict[tuple[int, str], int] = {}
    extra_ub: list[float] = []
    for ci, cls in enumerate(classes):
        if cls.zonal is not None:
            _spread_rows(ci, cls, cols, zones, n, extra_ub, spread_at, row)
    # A rounded LP plan first: often much better than the heuristic's, it tightens the cutoff
    # and stands if the search runs out of time (it may break a zonal spread: not then).
    limited = any(left is not None for left in problem.pool_left.values()) or bool(extra_ub)
    rounded = None
    if not limited:
        matrix = highs.Triplets(r, c, v, (len(lo), n))
        rounded = _rounded(cols, cost, classes, matrix, lo, hi, ub, budget)
    if rounded is not None:
        value = float(cost @ rounded)
        if value < cutoff:
            cutoff = value + 1e-9
        else:
            rounded = None
    row([(j, float(cost[j])) for j in range(n) if cost[j]], -math.inf, cutoff)
    total = n + len(extra_ub)
    cost = np.concatenate([cost, np.zeros(len(extra_ub))])
    left_s = budget.left()
    if left_s <= 0.002:
        if rounded is not None:
            return _decode(cols, classes, rounded, False, 0.0, "patterns: rounded LP plan")
        return Solution([], {}, False, 0.0, "time limit: no time left to solve")
    res = search(
        cost,
        highs.Triplets(r, c, v, (len(lo), total)),
        lo,
        hi,
        np.zeros(total),
        np.concatenate([ub, np.array(extra_ub)]),
        seconds=budget.wall_limit(left_s),
        limits=limits,
    )
    bound = res.dual_bound
    if res.status == highs.INFEASIBLE:
        if rounded is not None:
            # nothing cheaper than the rounded plan: it is the optimum
            return _decode(cols, classes, rounded, True, cutoff, "patterns: rounded LP plan")
        return Solution([], {}, True, cutoff, "patterns: nothing cheaper than the heuristic plan")
    status = f"patterns: {describe(res, limits)}"
    if res.x is None:
        if rounded is not None:
            return _decode(cols, classes, rounded, False, max(0.0, bound), status)
        return Solution([], {}, False, max(0.0, bound), status)
    optimal = res.status == highs.OPTIMAL
    if optimal:
        bound = max(bound, res.fun - 1e-7 * abs(res.fun))
    sol = np.round(res.x).astype(np.int64)
    zone_need = {key: int(sol[j]) for key, j in spread_at.items()}
    return _decode(cols, classes, sol, optimal, max(0.0, bound), status, zones, zone_need)


_Col = tuple[Option | None, int, dict[int, int]]


def _zone(problem: Problem, option: Option | None, e: int) -> str:
    if option is not None:
        return option.offering.zone
    return problem.cluster.nodes[e].node.labels.get(LABEL_TOPOLOGY_ZONE, "")


def _spread_rows(
    ci: int,
    cls: PodClass,
    cols: list[_Col],
    zones: list[str],
    n: int,
    extra_ub: list[float],
    spread_at: dict[tuple[int, str], int],
    row: Callable[[list[tuple[int, float]], float, float], None],
) -> None:
    """Rows and columns (after the `n` pattern columns) that keep a class's zonal spread:
    p[z] pods of the class in zone z (at most what the zone's patterns hold, all placed),
    low <= bound[z] + p[z] in every eligible zone (low = 0 when minDomains exceeds the
    eligible zones), and, in every zone that gets pods (used[z] = 1),
    bound[z] + p[z] - low <= maxSkew."""
    spread = cls.zonal
    assert spread is not None
    count = len(cls.pods)
    big = float(count + max(spread.bound.values(), default=0) + spread.max_skew)
    start = n + len(extra_ub)
    placed = {z: start + i for i, z in enumerate(spread.eligible)}
    used = {z: start + len(placed) + i for i, z in enumerate(spread.eligible)}
    low = start + 2 * len(placed)
    # with fewer eligible zones than minDomains the minimum is 0 (Kubernetes' rule)
    extra_ub.extend(
        [float(count)] * len(placed) + [1.0] * len(used) + [0.0 if spread.min_zero else big]
    )
    for z, pz in placed.items():
        spread_at[(ci, z)] = pz
        held = [(j, -float(f[ci])) for j, (_, _, f) in enumerate(cols) if ci in f and zones[j] == z]
        row([(pz, 1.0), *held], -math.inf, 0)
        row([(pz, 1.0), (used[z], -float(count))], -math.inf, 0)
        bound = float(spread.bound.get(z, 0))
        row([(low, 1.0), (pz, -1.0)], -math.inf, bound)
        row([(pz, 1.0), (low, -1.0), (used[z], big)], -math.inf, spread.max_skew + big - bound)
    row([(pz, 1.0) for pz in placed.values()], count, count)


def _rounded(
    cols: list[_Col],
    cost: np.ndarray,
    classes: Sequence[PodClass],
    matrix: highs.Triplets,
    lo: list[float],
    hi: list[float],
    upper: np.ndarray,
    budget: Budget,
) -> np.ndarray | None:
    """The LP relaxation rounded up (existing nodes down), then short classes covered
    greedily by the new-node pattern that covers most per dollar."""
    left_s = budget.left() / 4
    if left_s <= 0.002:
        return None
    lp = highs.solve(
        cost,
        matrix,
        lo,
        hi,
        np.zeros(len(cols)),
        upper,
        time_limit=budget.wall_limit(left_s),
    )
    if lp.x is None:
        return None
    out = np.zeros(len(cols), dtype=np.int64)
    for j, (bought, _, _) in enumerate(cols):
        xj = float(lp.x[j])
        out[j] = math.floor(xj + 1e-9) if bought is None else math.ceil(xj - 1e-9)
    short = {ci: len(c.pods) for ci, c in enumerate(classes)}
    for jj in np.nonzero(out)[0].tolist():
        for ci, k in cols[jj][2].items():
            short[ci] -= k * int(out[jj])
    while any(v > 0 for v in short.values()):
        best, score = -1, 0.0
        for j, (bought, _, fill) in enumerate(cols):
            if bought is None:
                continue
            covered = sum(min(k, short[ci]) for ci, k in fill.items() if short[ci] > 0)
            if covered and covered / cost[j] > score:
                best, score = j, covered / cost[j]
        if best < 0:
            return None
        out[best] += 1
        for ci, k in cols[best][2].items():
            short[ci] -= k
    return out


def _decode(
    cols: list[_Col],
    classes: Sequence[PodClass],
    sol: np.ndarray,
    optimal: bool,
    bound: float,
    status: str,
    zones: Sequence[str] = (),
    zone_need: dict[tuple[int, str], int] | None = None,
) -> Solution:
    """Nodes and existing-node placements from pattern counts; surplus pods are dropped (for a
    class with a zonal spread, each zone keeps the pods the solution counts there)."""
    need = {ci: len(cls.pods) for ci, cls in enumerate(classes)}
    per_zone = zone_need or {}
    nodes: list[tuple[Option, dict[int, int]]] = []
    existing: dict[int, dict[int, int]] = {}
    # existing nodes first (free), then new nodes
    picked = sorted(
        (j for j in range(len(cols)) if sol[j] > 0), key=lambda j: cols[j][0] is not None
    )
    for j in picked:
        bought, e, fill = cols[j]
        for _ in range(int(sol[j])):
            got = {}
            for ci, k in fill.items():
                take = min(k, need[ci])
                if classes[ci].zonal is not None:
                    take = min(take, per_zone.get((ci, zones[j]), 0))
                    per_zone[(ci, zones[j])] = per_zone.get((ci, zones[j]), 0) - take
                if take:
                    got[ci] = take
                    need[ci] -= take
            if not got:
                continue
            if bought is None:
                existing[e] = got
            else:
                nodes.append((bought, got))
    return Solution(nodes, existing, optimal, bound, status)
