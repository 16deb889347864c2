"""A valid lower bound on the hourly cost of any plan that places the same pods.

Bound = max(fluid LP, item bound), where

* the fluid LP (`lp.py`) covers the cpu, memory, pods (and any other requested resource) of
  every placed pod with fractional nodes: each pool's instance types at their cheapest
  offering, with allocatable net of that pool's DaemonSet overhead, plus the free capacity of
  existing nodes at price 0 (at most one of each). Pods that need different instance types
  (selectors, affinity, taints) form separate demand groups that may only use their columns.
  A node-count floor is added: required hostname anti-affinity among k pods that select each
  other needs k nodes, and a hostname spread with maxSkew s over n self-selecting pods needs
  ceil(n/s) (Karpenter's reading: a fresh node is an empty domain). Each node then also pays
  its DaemonSet overhead, which is what makes the floor bite.
* the item bound: a pod that fits no existing node needs at least the cheapest type that
  holds it. Likewise pods that need more than half of the largest node's capacity of one
  resource repel each other like hostname anti-affinity, and count towards a node floor.

Every real plan is feasible for the LP (route each pod's requests to its node), so neither
term can exceed the cost of any plan. Preferences are ignored here (a plan may drop them), and
PreferNoSchedule taints count as tolerated, so the bound stays valid for every plan that meets
the hard constraints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from karpy.apis.v1.labels import LABEL_HOSTNAME, TAINT_EFFECT_PREFER_NO_SCHEDULE
from karpy.scheduling.engine.lp import (
    Column,
    DemandGroup,
    NodeFloor,
    Seed,
    seed_floors,
    solve_cover,
)
from karpy.scheduling.engine.pools import PoolContext, bits
from karpy.scheduling.pods import PodView
from karpy.scheduling.taints import Toleration

__all__ = ["PlacedClass", "lower_bound"]

_PNS = Toleration(operator="Exists", effect=TAINT_EFFECT_PREFER_NO_SCHEDULE)


class PlacedClass(NamedTuple):
    """Identical pods the plan placed: one of them, their requests as a vector (in the solve's
    resource order), how many were placed, and whether any of them went to a new node."""

    pod: PodView
    vec: tuple[int, ...]
    pods_placed: int
    on_new: bool


def lower_bound(
    placed: Sequence[PlacedClass],
    *,
    pools: Sequence[PoolContext],
    existing_free: Sequence[tuple[int, ...]],
    resources: int,
) -> float:
    """A cost no plan placing the same pods can beat (see the module docstring).

    `existing_free` is each existing node's free room before the solve, `resources` the length
    of every vector. The ratio of a plan's cost to this bound is how the project measures plan
    quality, so it must stay valid for every plan that meets the hard constraints.
    """
    if not any(c.on_new for c in placed):
        return 0.0  # the plan launches nothing and costs nothing: no bound can be higher
    columns: list[Column] = [
        Column(0.0, tuple(max(0, f) for f in free), 1.0) for free in existing_free
    ]
    existing_cols = tuple(range(len(columns)))
    offsets: list[int] = []
    for pool in pools:
        offsets.append(len(columns))
        for t in range(len(pool.types)):
            columns.append(Column(pool.base_price[t], tuple(max(0, a) for a in pool.alloc[t])))
    dims = resources
    max_cap = [max((col.capacity[r] for col in columns), default=0) for r in range(dims)]
    # which columns hold one pod of a class: one vectorised comparison per class
    caps = np.array([col.capacity for col in columns], dtype=np.int64).reshape(len(columns), dims)
    free_rows = np.array(existing_free, dtype=np.int64).reshape(len(existing_free), dims)
    groups: dict[tuple[int, ...], list[int]] = {}
    item_bound = 0.0
    seeds: list[Seed] = []
    for c in placed:
        pod = c.pod
        n = c.pods_placed
        cols: set[int] = set(existing_cols)
        cheapest = math.inf
        for pool in pools:
            if pool.tolerated((*pod.tolerations, _PNS)) is not None:
                continue
            for alt in pod.requirement_alternatives():
                if pool.node_reqs.compatible(alt, well_known=pool.well_known) is not None:
                    continue
                merged = pool.node_reqs.union(alt)
                # columns by requirements only: smaller types relax the LP, which stays valid
                for t in bits(pool.compatible_mask(merged)):
                    cols.add(offsets[pool.index] + t)
                for t in bits(pool.fit_mask(merged, c.vec)):
                    cheapest = min(cheapest, pool.base_price[t])
        key = tuple(sorted(cols))
        fitting: frozenset[int] | None = None
        # Pods needing more than half of the largest node in some resource cannot share a node
        # with each other: they are seeds too, one group per resource.
        for r in range(dims):
            if 2 * c.vec[r] > max_cap[r]:
                fitting = fitting if fitting is not None else _holding(caps, key, c.vec)
                seeds.append(Seed(("half", r), fitting, n))
        for term in pod.anti_affinity:
            if term.topology_key == LABEL_HOSTNAME and term.selector.matches(pod.labels):
                fitting = fitting if fitting is not None else _holding(caps, key, c.vec)
                seeds.append(
                    Seed((term.selector, term.namespaces, term.namespace_selector), fitting, n)
                )
        demand = groups.setdefault(key, [0] * dims)
        for r in range(dims):
            demand[r] += c.vec[r] * n
        if c.on_new and math.isfinite(cheapest):
            fits_existing = bool(
                np.any(np.all(free_rows >= np.array(c.vec, dtype=np.int64), axis=1))
            )
            if not fits_existing:
                item_bound = max(item_bound, cheapest)
    floors = seed_floors(seeds)
    floors.append(NodeFloor(_node_floor(placed), tuple(range(len(columns)))))
    sol = solve_cover(
        columns,
        [DemandGroup(tuple(d), cols) for cols, d in groups.items()],
        floors=floors,
    )
    lp_value = sol.value if sol is not None else 0.0
    return max(lp_value, item_bound)


def _holding(
    caps: npt.NDArray[np.int64], columns: tuple[int, ...], vec: tuple[int, ...]
) -> frozenset[int]:
    """The columns among `columns` whose capacity holds one pod of `vec`."""
    at = np.array(columns, dtype=np.intp)
    held = np.all(caps[at] >= np.array(vec, dtype=np.int64), axis=1)
    return frozenset(int(i) for i in at[held])


class _SpreadDemand(NamedTuple):
    pods: int
    max_skew: int


def _node_floor(placed: Sequence[PlacedClass]) -> int:
    """Nodes any plan needs because of required hostname anti-affinity and spread."""
    anti: dict[tuple[object, ...], int] = {}
    spread: dict[tuple[object, ...], _SpreadDemand] = {}
    for c in placed:
        n = c.pods_placed
        if not n:
            continue
        pod = c.pod
        for t in pod.anti_affinity:
            if (
                t.topology_key == LABEL_HOSTNAME
                and t.selector.matches(pod.labels)
                and (pod.namespace in t.namespaces or t.namespace_selector is not None)
            ):
                key: tuple[object, ...] = (t.selector, t.namespaces, t.namespace_selector)
                anti[key] = anti.get(key, 0) + n
        for sc in pod.spread:
            if (
                sc.topology_key == LABEL_HOSTNAME
                and sc.when_unsatisfiable == "DoNotSchedule"
                and sc.selector.matches(pod.labels)
            ):
                skey: tuple[object, ...] = (sc.selector, pod.namespace, sc.max_skew)
                prev = spread.get(skey, _SpreadDemand(0, sc.max_skew))
                spread[skey] = _SpreadDemand(prev.pods + n, sc.max_skew)
    floor = max(anti.values(), default=0)
    for n, skew in spread.values():
        floor = max(floor, math.ceil(n / skew))
    return floor
