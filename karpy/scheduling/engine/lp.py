"""The fluid covering LP: the cheapest fractional set of nodes whose capacity covers the demand.

min sum_t price_t * x_t  subject to, for every demand group g and resource r, the capacity
routed to g from the columns it may use covers its demand, the capacity a column provides is
shared by the groups using it, and (optionally) node-count floors hold: at least k nodes among
given columns (k pods that repel each other, each fitting only those columns, need k nodes).

Any real plan is a feasible point (route each pod's requests to the node it sits on), so the
optimum is a valid lower bound on the cost of every plan. The packer also reads the solution:
which node types the optimum buys, and the dual prices that value each pod's requests.
With one group the LP has one row per resource, so HiGHS solves it in microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "Column",
    "CoverSolution",
    "DemandGroup",
    "NodeFloor",
    "Seed",
    "seed_floors",
    "solve_cover",
    "warm_up",
]


@dataclass(frozen=True, slots=True)
class Column:
    price: float
    capacity: tuple[int, ...]
    # None: unbounded (a node type can be bought any number of times); 1.0 for an existing node.
    upper: float | None = None


@dataclass(frozen=True, slots=True)
class DemandGroup:
    demand: tuple[int, ...]
    columns: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CoverSolution:
    value: float
    x: tuple[float, ...]
    # per group: the dual price of one unit of each resource (same order as the vectors)
    duals: tuple[tuple[float, ...], ...]
    floor_dual: float


class Seed(NamedTuple):
    """Pods that repel each other (they share `term`), the columns one of them fits, and how
    many of them there are."""

    term: Hashable
    columns: frozenset[int]
    pods: int


class NodeFloor(NamedTuple):
    """At least `nodes` nodes must come from `columns`."""

    nodes: int
    columns: Sequence[int]


def seed_floors(seeds: Sequence[Seed]) -> list[NodeFloor]:
    """Node-count floors from pods that must each have a node of their own.

    Pods sharing a term repel each other. For pods of one term whose fitting columns are all
    within a set C, the nodes hosting them are distinct and each is in C, so at least that many
    nodes come from C.
    """
    by_term: dict[Hashable, dict[frozenset[int], int]] = {}
    for term, cols, n in seeds:
        masks = by_term.setdefault(term, {})
        masks[cols] = masks.get(cols, 0) + n
    out: list[NodeFloor] = []
    for masks in by_term.values():
        union: set[int] = set()
        total = 0
        for cols, n in masks.items():
            union |= cols
            total += n
            inside = sum(m for other, m in masks.items() if other <= cols)
            out.append(NodeFloor(inside, tuple(sorted(cols))))
        out.append(NodeFloor(total, tuple(sorted(union))))
    return out


def warm_up() -> None:
    """Import the LP solver now (numpy and HiGHS's binding, about a fifth of a second), so the
    first solve does not pay."""
    import highspy  # noqa: F401
    import numpy  # noqa: F401


def solve_cover(
    columns: Sequence[Column],
    groups: Sequence[DemandGroup],
    *,
    floors: Sequence[NodeFloor] = (),
) -> CoverSolution | None:
    """Solve the covering LP; None when it is infeasible (some demand no column can hold)."""
    import numpy as np

    from karpy.scheduling.engine.highs import OPTIMAL, Triplets, solve

    n = len(columns)
    if n == 0 or not groups:
        return None
    dims = len(groups[0].demand)
    scale = [max(1, max(g.demand[r] for g in groups)) for r in range(dims)]
    live = [r for r in range(dims) if any(g.demand[r] > 0 for g in groups)]
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    rhs: list[float] = []
    row = 0
    demand_rows: dict[tuple[int, int], int] = {}
    nvars = n
    if len(groups) == 1:
        g = groups[0]
        for r in live:
            for t in g.columns:
                cap = columns[t].capacity[r]
                if cap:
                    rows.append(row)
                    cols.append(t)
                    vals.append(-cap / scale[r])
            rhs.append(-g.demand[r] / scale[r])
            demand_rows[(0, r)] = row
            row += 1
    else:
        # flow variables d[g, t, r]: capacity of column t routed to group g, per resource
        flow_index: dict[tuple[int, int, int], int] = {}
        for gi, g in enumerate(groups):
            for t in g.columns:
                for r in live:
                    flow_index[(gi, t, r)] = nvars
                    nvars += 1
        for gi, g in enumerate(groups):
            for r in live:
                for t in g.columns:
                    rows.append(row)
                    cols.append(flow_index[(gi, t, r)])
                    vals.append(-1.0)
                rhs.append(-g.demand[r] / scale[r])
                demand_rows[(gi, r)] = row
                row += 1
        users: dict[int, list[int]] = {}
        for gi, g in enumerate(groups):
            for t in g.columns:
                users.setdefault(t, []).append(gi)
        for t, gis in users.items():
            for r in live:
                for gi in gis:
                    rows.append(row)
                    cols.append(flow_index[(gi, t, r)])
                    vals.append(1.0)
                rows.append(row)
                cols.append(t)
                vals.append(-columns[t].capacity[r] / scale[r])
                rhs.append(0.0)
                row += 1
    floor_rows: list[int] = []
    for floor, floor_columns in floors:
        if floor <= 0 or not floor_columns:
            continue
        for t in floor_columns:
            rows.append(row)
            cols.append(t)
            vals.append(-1.0)
        rhs.append(-float(floor))
        floor_rows.append(row)
        row += 1
    if row == 0:
        return CoverSolution(0.0, (0.0,) * n, tuple((0.0,) * dims for _ in groups), 0.0)
    cost = np.zeros(nvars)
    cost[:n] = [c.price for c in columns]
    upper = [math.inf if c.upper is None else c.upper for c in columns]
    res = solve(
        cost,
        Triplets(rows, cols, vals, (row, nvars)),
        [-math.inf] * row,
        rhs,
        np.zeros(nvars),
        upper + [math.inf] * (nvars - n),
    )
    if res.status != OPTIMAL or res.x is None or res.row_duals is None:
        return None
    marginals = res.row_duals
    duals = []
    for gi in range(len(groups)):
        duals.append(
            tuple(
                (-float(marginals[demand_rows[(gi, r)]]) / scale[r])
                if (gi, r) in demand_rows
                else 0.0
                for r in range(dims)
            )
        )
    floor_dual = sum(-float(marginals[r]) for r in floor_rows)
    return CoverSolution(
        value=res.fun,
        x=tuple(float(v) for v in res.x[:n]),
        duals=tuple(duals),
        floor_dual=floor_dual,
    )
