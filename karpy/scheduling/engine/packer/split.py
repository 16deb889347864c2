"""Re-packing poorly filled nodes onto several smaller nodes when that is cheaper.

The last nodes of a batch hold what is left over; one node big enough for all of it can cost
more than two smaller ones (10.7 vCPU: a 16x, or an 8x and a 4x). Greedily pick the type whose
first-fit load is worth the most per price, repeat on what is left, and keep the result if it
is cheaper. Only nodes without hostname or port constraints qualify.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from karpy.scheduling.engine.packer.items import FilledNode, OpenNode
from karpy.scheduling.engine.pools import PoolContext, bits
from karpy.scheduling.pods import PodView

__all__ = ["cheapest_holding", "split_underfilled"]

# How many of the least-filled nodes are considered for splitting, how many pods they may
# hold, and how many node shapes a split chooses from (it is quadratic in pods x shapes).
_MAX_SPLITS = 32
_SPLIT_PODS = 400
_SPLIT_TYPES = 48
# A split into more nodes than this is not worth its launches.
_MAX_PARTS = 64


class _Entry(NamedTuple):
    """A pod to re-pack: its worth at the LP's dual prices, and its requests."""

    value: float
    vec: tuple[int, ...]
    pod: PodView


class _Part(NamedTuple):
    """One node of a split: its price, what its pods use, and the pods."""

    price: float
    used: list[int]
    pods: list[PodView]


class _Candidate(NamedTuple):
    """A type's first fit over the pods left: worth per price, and which pods it takes."""

    ratio: float
    type: int
    used: list[int]
    taken: list[int]


class _Scored(NamedTuple):
    fill: float
    position: int  # in the list of filled nodes


def cheapest_holding(pool: PoolContext, node: OpenNode, used: Sequence[int]) -> float:
    """The price of the cheapest type the node may be that holds `used` (inf if none)."""
    prices = pool.prices(node.reqs)
    best = math.inf
    for t in bits(node.mask):
        a = pool.alloc[t]
        if prices[t] < best and all(u <= c for u, c in zip(used, a, strict=True)):
            best = prices[t]
    return best


def split_underfilled(
    pool: PoolContext,
    nodes: list[FilledNode],
    duals: Sequence[float],
    opened: list[OpenNode],
) -> list[FilledNode]:
    """`nodes` with the poorly filled ones replaced by cheaper splits (see the module
    docstring); `duals` value the pods, and the new nodes are appended to `opened` too."""
    if not nodes:
        return nodes
    scored: list[_Scored] = []
    for i, (node, _pods) in enumerate(nodes):
        if any(item.constrained for item, _ in node.contents):
            continue
        price = cheapest_holding(pool, node, node.used)
        if not math.isfinite(price):
            continue
        scored.append(_Scored(_fill(pool, node, duals), i))
    scored.sort()
    replaced: dict[int, list[FilledNode]] = {}
    for fill, i in scored[:_MAX_SPLITS]:
        if fill > 0.97:
            break
        node, pods = nodes[i]
        if len(pods) > _SPLIT_PODS:
            continue
        vec_of = {id(p): item.vec for item, _ in node.contents for p in item.pods}
        entries = sorted(
            (_Entry(_value(duals, vec_of[id(p)]), vec_of[id(p)], p) for p in pods),
            key=lambda e: -e.value,
        )
        current = cheapest_holding(pool, node, node.used)
        parts = _greedy_split(pool, node, entries)
        if parts is None:
            continue
        cost = sum(part.price for part in parts)
        if cost < current - 1e-9:
            out = []
            for part in parts:
                new = OpenNode(
                    len(opened),
                    node.reqs,
                    node.sig,
                    node.target,
                    pool.alloc[node.target],
                    node.mask,
                )
                new.used = list(part.used)
                opened.append(new)
                out.append(FilledNode(new, part.pods))
            replaced[i] = out
    if not replaced:
        return nodes
    result: list[FilledNode] = []
    for i, entry in enumerate(nodes):
        result.extend(replaced.get(i, [entry]))
    return result


def _value(duals: Sequence[float], vec: tuple[int, ...]) -> float:
    return sum(d * v for d, v in zip(duals, vec, strict=True)) or float(sum(vec))


def _fill(pool: PoolContext, node: OpenNode, duals: Sequence[float]) -> float:
    price = cheapest_holding(pool, node, node.used)
    worth = _value(duals, tuple(node.used))
    return worth / price if price > 0 and math.isfinite(price) else 1.0


def _greedy_split(pool: PoolContext, node: OpenNode, entries: list[_Entry]) -> list[_Part] | None:
    """Split the pods over types cheaper than the node: repeatedly the type whose first fit
    over the pods left is worth the most per price; None when no such split exists."""
    prices = pool.prices(node.reqs)
    current = cheapest_holding(pool, node, node.used)
    shapes: dict[tuple[tuple[int, ...], float], int] = {}
    for t in bits(node.mask):
        p = prices[t]
        # only types cheaper than the node as it is can be part of a cheaper split
        if math.isfinite(p) and 0 < p < current:
            shapes.setdefault((pool.alloc[t], p), t)
    candidates = sorted(shapes.values(), key=lambda t: -sum(max(0, a) for a in pool.alloc[t]))
    if len(candidates) > _SPLIT_TYPES:
        step = len(candidates) / _SPLIT_TYPES
        candidates = [candidates[int(i * step)] for i in range(_SPLIT_TYPES)]
    remaining = entries
    parts: list[_Part] = []
    while remaining:
        best: _Candidate | None = None
        for t in candidates:
            cap = pool.alloc[t]
            used = [0] * len(cap)
            taken: list[int] = []
            worth = 0.0
            for j, (v, vec, _p) in enumerate(remaining):
                if all(u + x <= c for u, x, c in zip(used, vec, cap, strict=True)):
                    for r, x in enumerate(vec):
                        used[r] += x
                    taken.append(j)
                    worth += v
            if not taken:
                continue
            ratio = worth / prices[t]
            if best is None or ratio > best.ratio + 1e-12:
                best = _Candidate(ratio, t, used, taken)
        if best is None:
            return None
        chosen = set(best.taken)
        parts.append(_Part(prices[best.type], best.used, [remaining[j].pod for j in best.taken]))
        remaining = [e for j, e in enumerate(remaining) if j not in chosen]
        if len(parts) > _MAX_PARTS:
            return None
    return parts
