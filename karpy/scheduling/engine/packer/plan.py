"""The fluid LP's plan for one pool's batch: which node types to buy, how many, and what each
resource is worth.

The covering LP (lp.py) over the pods sent to the pool gives an optimal fractional purchase
and the dual price of each resource. The packer opens the nodes it buys up front, opens new
nodes of the type whose capacity is worth the most per price, and orders pods by their share
of the batch's demand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from karpy.scheduling.engine.lp import (
    Column,
    CoverSolution,
    DemandGroup,
    NodeFloor,
    Seed,
    seed_floors,
    solve_cover,
)
from karpy.scheduling.engine.packer.items import Item
from karpy.scheduling.engine.pools import PoolContext, bits

__all__ = ["NodeCount", "PoolPlan", "lp_nodes", "plan_pool", "solve_items"]


@dataclass
class PoolPlan:
    """The LP's answer for a batch: one dual price per resource (plus the node floor's), the
    purchase per type, and the types ranked by dual value per price (best first)."""

    duals: tuple[float, ...]
    floor_dual: float = 0.0
    lp_x: tuple[float, ...] = ()
    ranking: list[int] = field(default_factory=list)


class NodeCount(NamedTuple):
    """How many nodes of one instance type (by index in the pool) to open."""

    type: int
    nodes: int


def solve_items(pool: PoolContext, items: Sequence[Item], floor: int) -> CoverSolution | None:
    """The fluid LP over `items` (with node floors from pods that repel each other)."""
    n = len(pool.types)
    dims = len(pool.dims.names)
    columns = [
        Column(price=pool.base_price[t], capacity=tuple(max(0, a) for a in pool.alloc[t]))
        for t in range(n)
    ]
    # Group demand by the types pods may use by their requirements, not by size: letting a
    # group use types too small for its pods only relaxes the LP (sizes are the floors'
    # business), and it keeps the LP to a handful of groups instead of one per pod size.
    by_mask: dict[int, list[int]] = {}
    for item in items:
        compat = pool.compatible_mask(pool.node_reqs.union(item.reqs)) & pool.port_mask(item.ports)
        demand = by_mask.setdefault(compat or item.mask, [0] * dims)
        k = len(item.pods)
        for r in range(dims):
            demand[r] += item.vec[r] * k
    groups = [DemandGroup(tuple(d), bits(m)) for m, d in by_mask.items() if m]
    if not groups:
        return None
    seeds: list[Seed] = [
        Seed(t, frozenset(bits(item.mask)), len(item.pods))
        for item in items
        for t in item.anti
        if t in item.matched
    ]
    max_cap = [max((c.capacity[r] for c in columns), default=0) for r in range(dims)]
    for item in items:
        for r in range(dims):
            if 2 * item.vec[r] > max_cap[r]:
                seeds.append(Seed(("half", r), frozenset(bits(item.mask)), len(item.pods)))
    floors = seed_floors(seeds)
    if floor and not seeds:
        floor_mask = 0
        for item in items:
            floor_mask |= item.mask
        floors.append(NodeFloor(floor, bits(floor_mask)))
    return solve_cover(columns, groups, floors=floors)


def plan_pool(pool: PoolContext, items: Sequence[Item], floor: int) -> PoolPlan:
    """Solve the fluid LP for the pool's items and rank types by dual value per price; set
    each item's `value`, its share of the batch's demand, which orders placement."""
    n = len(pool.types)
    dims = len(pool.dims.names)
    plan = PoolPlan(duals=(0.0,) * dims)
    if n == 0 or not items:
        return plan
    sol = solve_items(pool, items, floor)
    if sol is not None:
        # one dual vector for valuing pods: the demand-weighted average over groups
        if len(sol.duals) == 1:
            (plan.duals,) = sol.duals
        else:
            acc = [0.0] * dims
            for d in sol.duals:
                for r in range(dims):
                    acc[r] = max(acc[r], d[r])
            plan.duals = tuple(acc)
        plan.floor_dual = sol.floor_dual
        plan.lp_x = sol.x
    else:
        total = [1.0] * dims
        for item in items:
            for r in range(dims):
                total[r] += item.vec[r] * len(item.pods)
        plan.duals = tuple(1.0 / t for t in total)
    duals = plan.duals
    fd = plan.floor_dual

    def efficiency(t: int) -> tuple[float, int]:
        price = pool.base_price[t]
        worth = sum(d * max(0, a) for d, a in zip(duals, pool.alloc[t], strict=True)) + fd
        size = sum(max(0, a) for a in pool.alloc[t])
        return (-(worth / price) if price > 0 else float("-inf"), -size)

    plan.ranking = sorted(range(n), key=efficiency)
    # Order pods by their share of the batch's total demand summed over resources, so that
    # CPU-heavy and memory-heavy pods interleave and every node receives a balanced mix.
    totals = [0] * dims
    for item in items:
        k = len(item.pods)
        for r in range(dims):
            totals[r] += item.vec[r] * k
    inv = [1.0 / t if t > 0 else 0.0 for t in totals]
    for item in items:
        item.value = sum(w * v for w, v in zip(inv, item.vec, strict=True))
    return plan


def lp_nodes(
    pool: PoolContext, lp_x: Sequence[float], ranking: Sequence[int], *, ceil: bool = False
) -> list[NodeCount]:
    """How many nodes of which type the LP optimum buys, rounded down (or up).

    Types with the same allocatable and price (an amd64 and an arm64 twin) are one shape to
    the LP, which may split its purchase between them: sum those before rounding.
    """
    if not lp_x:
        return []
    shapes: dict[tuple[tuple[int, ...], float], _Shape] = {}
    for t, x in enumerate(lp_x):
        if x <= 1e-9:
            continue
        key = (pool.alloc[t], pool.base_price[t])
        total, best = shapes.get(key, _Shape(0.0, t))
        if x > lp_x[best]:
            best = t
        shapes[key] = _Shape(total + x, best)
    out = []
    for total, t in shapes.values():
        count = int(total + 1e-6)
        if total - count > (1e-6 if ceil else 0.9):
            count += 1
        if count:
            out.append(NodeCount(t, count))
    out.sort(key=lambda nc: ranking.index(nc.type))
    return out


class _Shape(NamedTuple):
    """A shape's total purchase, and the type among its twins the LP bought most of."""

    total: float
    best: int
