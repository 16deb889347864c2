"""Cost-aware packing of pods onto new nodes of one NodePool.

Karpenter fills NodeClaims first-fit in CPU-descending order and lets each grow until only its
largest instance types still fit. With one node shape that strands memory on early nodes and
CPU on late ones (1.37-1.44x the fluid bound on its own benchmark catalogue). Here the batch is
packed as a whole:

1. The fluid covering LP (`lp.py`) over the pods sent to this pool says which node types an
   optimal fractional plan buys, how many, and the dual price of each resource.
2. That many nodes are opened up front, each aiming at one of those types.
3. Pods are placed largest first (by their share of the batch's demand), each on the
   least-loaded open node that can take it, so every node receives a similar mix and the
   resources run out together. Node-level constraints (hostname anti-affinity and spread, host
   ports, requirements pinned by earlier pods) are checked per node. Pods that fit nowhere open
   a node of the type the LP values most.

When pods are large relative to nodes, balancing strands capacity in every node, and the LP's
fractional mix of types can mislead (it does not know that only four 28Gi pods fit a 128Gi
node). So a batch is packed several ways - balanced, first fit decreasing, or best-aligned fit, with
the LP's node counts rounded down, up, or no nodes opened up front - and the cheapest plan is
kept. First fit scans the open nodes per pod, which is quadratic when thousands of nodes refuse
pods for their hostname constraints, so batches above 5,000 pods are packed balanced only.
4. Each node finally gets every type that holds its pods, cheapest first, so the launch buys
   the cheapest type that fits what actually landed on it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from karpy.scheduling.engine.lp import Column, CoverSolution, DemandGroup, seed_floors, solve_cover
from karpy.scheduling.engine.pools import PoolContext, bits
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirements

__all__ = ["FilledNode", "Item", "OpenNode", "Packer", "Term"]

# How many open nodes may refuse one item (identical pods) before new nodes are opened for it.
_MAX_REJECTIONS = 4096
# How many of the least-filled nodes are considered for splitting, how many pods they may
# hold, and how many node shapes a split chooses from (it is quadratic in pods x shapes).
_MAX_SPLITS = 32
_SPLIT_PODS = 400
_SPLIT_TYPES = 48


@dataclass(eq=False, slots=True)
class Term:
    """A hostname-scoped constraint pods on one node are checked against."""

    id: int
    kind: str  # "anti" | "spread" | "affinity"


@dataclass(eq=False, slots=True)
class Item:
    """Identical pods bound for this pool with identical (pinned) requirements."""

    vec: tuple[int, ...]
    reqs: Requirements
    mask: int
    pods: list[PodView]
    # hostname terms: ids of terms selecting these pods; terms these pods own
    matched: tuple[int, ...] = ()
    anti: tuple[int, ...] = ()
    spread: tuple[tuple[int, int], ...] = ()
    affinity: tuple[int, ...] = ()
    ports: frozenset[tuple[str, str, int]] = frozenset()
    value: float = 0.0
    seed: bool = False
    placed: int = 0
    failed: list[PodView] = field(default_factory=list)

    @property
    def constrained(self) -> bool:
        return bool(self.matched or self.anti or self.spread or self.affinity or self.ports)


class OpenNode:
    """A NodeClaim being filled."""

    __slots__ = (
        "anti",
        "cap",
        "caps",
        "contents",
        "counts",
        "full",
        "idx",
        "load",
        "mask",
        "ports",
        "reqs",
        "sig",
        "target",
        "used",
        "version",
    )

    def __init__(
        self, idx: int, reqs: Requirements, sig: int, target: int, cap: tuple[int, ...], mask: int
    ) -> None:
        self.idx = idx
        self.reqs = reqs
        self.sig = sig
        self.target = target
        self.cap = cap
        self.used = [0] * len(cap)
        self.mask = mask
        self.counts: dict[int, int] = {}
        self.anti: set[int] = set()
        self.caps: dict[int, int] = {}
        self.ports: set[tuple[str, str, int]] = set()
        self.contents: list[tuple[Item, int]] = []
        self.load = 0.0
        self.version = 0
        self.full = False


class FilledNode(NamedTuple):
    """A packed node and the pods placed on it."""

    node: OpenNode
    pods: list[PodView]


class Packer:
    """Packs the items of one pool; `run()` returns the filled nodes."""

    def __init__(
        self,
        pool: PoolContext,
        items: Sequence[Item],
        *,
        floor: int = 0,
        first_fit: bool = False,
        aligned: bool = False,
        preopen: str = "floor",
    ) -> None:
        self.pool = pool
        self.first_fit = first_fit or aligned
        self.aligned = aligned
        self.preopen = preopen
        self.items = list(items)
        self.floor = floor
        self.nodes: list[OpenNode] = []
        self.sigs: dict[Requirements, int] = {}
        self.sig_reqs: list[Requirements] = []
        self.buckets: dict[tuple[int, int], list[tuple[float, int, int, int]]] = {}
        self._bucket_ok: dict[tuple[int, int, Requirements], int] = {}
        self._seq = 0
        self.affinity_nodes: dict[int, list[OpenNode]] = {}
        # assignments: node idx -> list of pods
        self.assigned: dict[int, list[PodView]] = {}
        dims = len(pool.dims.names)
        self.duals: tuple[float, ...] = (0.0,) * dims
        self.floor_dual = 0.0
        self.lp_x: tuple[float, ...] = ()
        self.ranking: list[int] = []
        self._ff_nodes: list[OpenNode] = []
        dims_n = len(pool.dims.names)
        self._min_vec = tuple(
            min((it.vec[r] for it in self.items if it.vec[r] > 0), default=0) for r in range(dims_n)
        )
        for item in self.items:
            for t in item.affinity:
                self.affinity_nodes.setdefault(t, [])

    # ---- planning ---------------------------------------------------------------------------

    def _solve(self, items: Sequence[Item]) -> CoverSolution | None:
        """The fluid LP over `items` (with node floors from pods that repel each other)."""
        pool = self.pool
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
            compat = pool.compatible_mask(pool.node_reqs.union(item.reqs)) & pool.all_mask
            demand = by_mask.setdefault(compat or item.mask, [0] * dims)
            k = len(item.pods)
            for r in range(dims):
                demand[r] += item.vec[r] * k
        groups = [DemandGroup(tuple(d), bits(m)) for m, d in by_mask.items() if m]
        if not groups:
            return None
        seeds: list[tuple[object, frozenset[int], int]] = [
            (t, frozenset(bits(item.mask)), len(item.pods))
            for item in items
            for t in item.anti
            if t in item.matched
        ]
        max_cap = [max((c.capacity[r] for c in columns), default=0) for r in range(dims)]
        for item in items:
            for r in range(dims):
                if 2 * item.vec[r] > max_cap[r]:
                    seeds.append((("half", r), frozenset(bits(item.mask)), len(item.pods)))
        floors = seed_floors(seeds)
        if self.floor and not seeds:
            floor_mask = 0
            for item in items:
                floor_mask |= item.mask
            floors.append((self.floor, bits(floor_mask)))
        return solve_cover(columns, groups, floors=floors)

    def _plan(self) -> None:
        """Solve the fluid LP for this pool's items; rank types by dual value per price."""
        pool = self.pool
        n = len(pool.types)
        if n == 0 or not self.items:
            return
        dims = len(pool.dims.names)
        sol = self._solve(self.items)
        if sol is not None:
            # one dual vector for valuing pods: the demand-weighted average over groups
            if len(sol.duals) == 1:
                self.duals = sol.duals[0]
            else:
                acc = [0.0] * dims
                for d in sol.duals:
                    for r in range(dims):
                        acc[r] = max(acc[r], d[r])
                self.duals = tuple(acc)
            self.floor_dual = sol.floor_dual
            self.lp_x = sol.x
        else:
            total = [1.0] * dims
            for item in self.items:
                for r in range(dims):
                    total[r] += item.vec[r] * len(item.pods)
            self.duals = tuple(1.0 / t for t in total)
        duals = self.duals
        fd = self.floor_dual

        def efficiency(t: int) -> tuple[float, int]:
            price = pool.base_price[t]
            worth = sum(d * max(0, a) for d, a in zip(duals, pool.alloc[t], strict=True)) + fd
            size = sum(max(0, a) for a in pool.alloc[t])
            return (-(worth / price) if price > 0 else float("-inf"), -size)

        self.ranking = sorted(range(n), key=efficiency)
        # Order pods by their share of the batch's total demand summed over resources, so that
        # CPU-heavy and memory-heavy pods interleave and every node receives a balanced mix.
        totals = [0] * dims
        for item in self.items:
            k = len(item.pods)
            for r in range(dims):
                totals[r] += item.vec[r] * k
        inv = [1.0 / t if t > 0 else 0.0 for t in totals]
        for item in self.items:
            item.value = sum(w * v for w, v in zip(inv, item.vec, strict=True))

    def _sig(self, reqs: Requirements) -> int:
        got = self.sigs.get(reqs)
        if got is None:
            got = len(self.sig_reqs)
            self.sigs[reqs] = got
            self.sig_reqs.append(reqs)
        return got

    def _open(self, target: int, reqs: Requirements) -> OpenNode:
        pool = self.pool
        node = OpenNode(
            len(self.nodes),
            reqs,
            self._sig(reqs),
            target,
            pool.alloc[target],
            pool.compatible_mask(reqs),
        )
        self.nodes.append(node)
        self._ff_nodes.append(node)
        self.assigned[node.idx] = []
        self._push(node)
        return node

    def _push(self, node: OpenNode) -> None:
        node.version += 1
        self._seq += 1
        heapq.heappush(
            self.buckets.setdefault((node.sig, node.target), []),
            (node.load, node.idx, node.version, self._seq),
        )

    # ---- constraints ------------------------------------------------------------------------

    def _room(self, node: OpenNode, item: Item, want: int) -> int:
        """How many pods of `item` (up to `want`) the node can take now."""
        used = node.used
        cap = node.cap
        k = want
        for r, v in enumerate(item.vec):
            if v:
                free = cap[r] - used[r]
                if free < v:
                    return 0
                q = free // v
                if q < k:
                    k = q
        if not item.constrained and not node.anti and not node.caps:
            return k
        if item.ports:
            if item.ports & node.ports:
                return 0
            k = min(k, 1)
        counts = node.counts
        for t in item.anti:
            if counts.get(t, 0):
                return 0
        for t in item.matched:
            if t in node.anti:
                return 0
            if t in item.anti:
                k = min(k, 1)
            c = node.caps.get(t)
            if c is not None:
                k = min(k, c - counts.get(t, 0))
        for t, skew in item.spread:
            if t in item.matched:
                k = min(k, skew - counts.get(t, 0))
            elif counts.get(t, 0) > skew:
                return 0
        for t in item.affinity:
            if not counts.get(t, 0) and node.contents:
                return 0
        return max(k, 0)

    def _merged_key(self, bucket: tuple[int, int], item: Item) -> tuple[int, Requirements] | None:
        """The signature of a node in `bucket` after taking `item`; None if incompatible.

        Cached by (signature, target type, the item's requirements): items sharing
        requirements (most of them) share the answer."""
        sig, target = bucket
        if not (item.mask >> target) & 1:
            return None
        key = (sig, target, item.reqs)
        got = self._bucket_ok.get(key)
        if got is None:
            reqs = self.sig_reqs[sig]
            if reqs.intersects(item.reqs) is not None:
                got = -1
            else:
                merged = reqs.union(item.reqs)
                if not (self.pool.compatible_mask(merged) >> target) & 1:
                    got = -1
                else:
                    got = self._sig(merged)
            self._bucket_ok[key] = got
        if got < 0:
            return None
        return got, self.sig_reqs[got]

    def _merged(self, node: OpenNode, item: Item) -> tuple[int, Requirements] | None:
        """The node's signature after taking `item`, or None when they are incompatible."""
        return self._merged_key((node.sig, node.target), item)

    def _add(self, node: OpenNode, item: Item, k: int, merged: tuple[int, Requirements]) -> None:
        used = node.used
        for r, v in enumerate(item.vec):
            if v:
                used[r] += v * k
        if merged[0] != node.sig:
            node.sig = merged[0]
            node.reqs = merged[1]
            node.mask &= self.pool.compatible_mask(merged[1])
        node.mask &= item.mask
        if item.constrained:
            for t in item.matched:
                node.counts[t] = node.counts.get(t, 0) + k
            for t in item.anti:
                node.anti.add(t)
            for t, skew in item.spread:
                prev = node.caps.get(t)
                node.caps[t] = skew if prev is None else min(prev, skew)
            node.ports.update(item.ports)
            for t in item.matched:
                lst = self.affinity_nodes.get(t)
                if lst is not None and (not lst or lst[-1] is not node):
                    lst.append(node)
        node.contents.append((item, k))
        start = item.placed
        self.assigned[node.idx].extend(item.pods[start : start + k])
        item.placed += k
        cap = node.cap
        load = 0.0
        for r, u in enumerate(used):
            c = cap[r]
            if u:
                x = u / c if c > 0 else float("inf")
                if x > load:
                    load = x
        node.load = load

    @staticmethod
    def _alignment(node: OpenNode, item: Item) -> float:
        """Cosine between the pod's requests and the node's free capacity (both relative to
        the node's size): high when the pod is shaped like the room left, so memory-heavy
        pods go to memory-rich nodes and the mix the LP bought is used as intended."""
        cap = node.cap
        used = node.used
        dot = nv = nf = 0.0
        for r, v in enumerate(item.vec):
            c = cap[r]
            if c <= 0:
                continue
            a = v / c
            b = (c - used[r]) / c
            dot += a * b
            nv += a * a
            nf += b * b
        if nv <= 0 or nf <= 0:
            return 0.0
        return dot / math.sqrt(nv * nf)

    def _load_after(self, node: OpenNode, item: Item) -> float:
        cap = node.cap
        used = node.used
        load = 0.0
        for r, v in enumerate(item.vec):
            u = used[r] + v
            if u:
                c = cap[r]
                x = u / c if c > 0 else float("inf")
                if x > load:
                    load = x
        return load if load > node.load else node.load

    # ---- placement --------------------------------------------------------------------------

    def _new_node_target(self, item: Item) -> int | None:
        for t in self.ranking:
            if (item.mask >> t) & 1:
                return t
        return None

    def _place_affinity(self, item: Item) -> None:
        """Pods that must share a node with pods their hostname affinity selects."""
        while item.placed < len(item.pods):
            want = len(item.pods) - item.placed
            candidates: list[OpenNode] = []
            for t in item.affinity:
                candidates.extend(self.affinity_nodes.get(t, ()))
            done = False
            for node in candidates:
                merged = self._merged(node, item)
                if merged is None:
                    continue
                k = self._room(node, item, want)
                if k > 0:
                    self._add(node, item, k, merged)
                    self._push(node)
                    done = True
                    break
            if done:
                continue
            if candidates or not all(t in item.matched for t in item.affinity):
                # a matching node exists but is full, or nothing can bootstrap the group
                item.failed.extend(item.pods[item.placed :])
                item.placed = len(item.pods)
                return
            target = self._new_node_target(item)
            if target is None:
                item.failed.extend(item.pods[item.placed :])
                item.placed = len(item.pods)
                return
            node = self._open(target, self.pool.node_reqs)
            merged = self._merged(node, item)
            k = self._room(node, item, want) if merged is not None else 0
            if k <= 0 or merged is None:
                item.failed.extend(item.pods[item.placed :])
                item.placed = len(item.pods)
                return
            self._add(node, item, k, merged)
            self._push(node)

    def _place_first_fit(self, item: Item) -> None:
        """First fit over the open nodes in opening order (LP nodes first), or the best-aligned
        fullest node that fits; identical pods go in batches."""
        if not self.aligned:
            self._place_first_fit_fast(item)
            return
        total = len(item.pods)
        while item.placed < total:
            want = total - item.placed
            best: OpenNode | None = None
            best_merged: tuple[int, Requirements] | None = None
            best_key = (0.0, 0.0)
            for node in self.nodes:
                merged = self._merged(node, item)
                if merged is None or self._room(node, item, 1) <= 0:
                    continue
                if not self.aligned:
                    best, best_merged = node, merged
                    break
                # best aligned, then fullest (best fit)
                key = (-round(self._alignment(node, item), 2), -self._load_after(node, item))
                if best is None or key < best_key:
                    best, best_merged, best_key = node, merged, key
            if best is not None and best_merged is not None:
                self._add(best, item, self._room(best, item, want), best_merged)
            else:
                target = self._new_node_target(item)
                fresh = self._open(target, self.pool.node_reqs) if target is not None else None
                merged = self._merged(fresh, item) if fresh is not None else None
                if fresh is None or merged is None or self._room(fresh, item, 1) <= 0:
                    item.failed.extend(item.pods[item.placed :])
                    item.placed = total
                    return
                self._add(fresh, item, self._room(fresh, item, want), merged)

    def _place_first_fit_fast(self, item: Item) -> None:
        """First fit decreasing. Nodes that can no longer take the smallest pod of the batch
        leave the scan list, and the scan for one item resumes where its last pod went (the
        nodes before refused it and still do), so the work stays near linear."""
        total = len(item.pods)
        nodes = self._ff_nodes
        start = 0
        cache: dict[tuple[int, int], tuple[int, Requirements] | None] = {}
        room = self._room
        while item.placed < total:
            want = total - item.placed
            found = -1
            merged: tuple[int, Requirements] | None = None
            for j in range(start, len(nodes)):
                node = nodes[j]
                if node.full or room(node, item, 1) <= 0:
                    continue
                key = (node.sig, node.target)
                if key in cache:
                    merged = cache[key]
                else:
                    merged = cache[key] = self._merged_key(key, item)
                if merged is not None:
                    found = j
                    break
            if found < 0 or merged is None:
                target = self._new_node_target(item)
                fresh = self._open(target, self.pool.node_reqs) if target is not None else None
                merged = self._merged(fresh, item) if fresh is not None else None
                if fresh is None or merged is None or self._room(fresh, item, 1) <= 0:
                    item.failed.extend(item.pods[item.placed :])
                    item.placed = total
                    break
                found = len(nodes) - 1
            node = nodes[found]
            self._add(node, item, self._room(node, item, want), merged)
            self._mark_full(node)
            start = found
        if len(nodes) > 64 and sum(1 for n in nodes if n.full) * 2 > len(nodes):
            self._ff_nodes = [n for n in nodes if not n.full]

    def _mark_full(self, node: OpenNode) -> None:
        low = self._min_vec
        cap = node.cap
        used = node.used
        for r, v in enumerate(low):
            if v and cap[r] - used[r] < v:
                node.full = True
                return

    def _place(self, item: Item) -> None:
        if item.affinity:
            self._place_affinity(item)
            return
        if self.first_fit:
            self._place_first_fit(item)
            return
        total = len(item.pods)
        rejected: list[OpenNode] = []
        rejected_ids: set[int] = set()
        refusals = 0
        buckets = self.buckets
        merged_by_bucket: dict[tuple[int, int], tuple[int, Requirements] | None] = {}
        while item.placed < total:
            best: OpenNode | None = None
            best_merged: tuple[int, Requirements] | None = None
            best_score = 0.0
            for key in list(buckets):
                heap = buckets[key]
                if key in merged_by_bucket:
                    merged = merged_by_bucket[key]
                    if merged is None:
                        continue  # the whole bucket is incompatible with this item
                else:
                    merged = merged_by_bucket[key] = self._merged_key(key, item)
                    if merged is None:
                        continue
                while heap:
                    _, idx, version, _ = heap[0]
                    node = self.nodes[idx]
                    if node.version != version or idx in rejected_ids:
                        heapq.heappop(heap)
                        continue
                    if self._room(node, item, 1) <= 0:
                        heapq.heappop(heap)
                        rejected.append(node)
                        rejected_ids.add(idx)
                        refusals += 1
                        if refusals > _MAX_REJECTIONS:
                            break
                        continue
                    score = self._load_after(node, item)
                    if (
                        best is None
                        or score < best_score
                        or (score == best_score and idx < best.idx)
                    ):
                        best, best_merged, best_score = node, merged, score
                    break
                if refusals > _MAX_REJECTIONS:
                    break
            if best is None or best_merged is None:
                target = self._new_node_target(item)
                if target is None:
                    item.failed.extend(item.pods[item.placed :])
                    item.placed = total
                    break
                best = self._open(target, self.pool.node_reqs)
                best_merged = self._merged(best, item)
                if best_merged is None or self._room(best, item, 1) <= 0:
                    # even an empty node of the best type refuses it: try any type that fits
                    fallback = self._fallback_target(item)
                    if fallback is None:
                        item.failed.extend(item.pods[item.placed :])
                        item.placed = total
                        break
                    best.target = fallback
                    best.cap = self.pool.alloc[fallback]
                    best_merged = self._merged(best, item)
                    if best_merged is None or self._room(best, item, 1) <= 0:
                        item.failed.extend(item.pods[item.placed :])
                        item.placed = total
                        break
            # take one pod (spreading identical pods keeps every node's mix alike), or a
            # batch when the node is empty and the item alone is being seeded.
            self._add(best, item, 1, best_merged)
            self._push(best)
        for node in rejected:
            self._push(node)

    def _fallback_target(self, item: Item) -> int | None:
        for t in bits(item.mask):
            return t
        return None

    def _lp_nodes(self, lp_x: Sequence[float], *, ceil: bool = False) -> list[tuple[int, int]]:
        """How many nodes of which type the LP optimum buys, rounded down (or up).

        Types with the same allocatable and price (an amd64 and an arm64 twin) are one shape to
        the LP, which may split its purchase between them: sum those before rounding.
        """
        if not lp_x:
            return []
        pool = self.pool
        shapes: dict[tuple[tuple[int, ...], float], tuple[float, int]] = {}
        for t, x in enumerate(lp_x):
            if x <= 1e-9:
                continue
            key = (pool.alloc[t], pool.base_price[t])
            total, best = shapes.get(key, (0.0, t))
            if x > lp_x[best]:
                best = t
            shapes[key] = (total + x, best)
        out = []
        for total, t in shapes.values():
            count = int(total + 1e-6)
            if total - count > (1e-6 if ceil else 0.9):
                count += 1
            if count:
                out.append((t, count))
        out.sort(key=lambda tc: self.ranking.index(tc[0]))
        return out

    def _preopen(self, *, ceil: bool) -> None:
        """Open the nodes the LP buys. Pods pinned to different domains (zones) cannot share
        nodes, so without node floors each pinned group gets its own LP and its own pinned
        nodes; otherwise one LP over the pool decides."""
        pool = self.pool
        single = self.floor or self.preopen == "global" or any(item.seed for item in self.items)
        parts: dict[Requirements, list[Item]] = {}
        for item in self.items:
            parts.setdefault(Requirements() if single else item.reqs, []).append(item)
        if len(parts) == 1:
            for t, count in self._lp_nodes(self.lp_x, ceil=ceil):
                for _ in range(count):
                    self._open(t, pool.node_reqs)
            return
        for reqs, items in parts.items():
            sol = self._solve(items)
            if sol is None:
                continue
            merged = pool.node_reqs.union(reqs)
            compat = pool.compatible_mask(merged)
            for t, count in self._lp_nodes(sol.x, ceil=ceil):
                node_reqs = merged if (compat >> t) & 1 else pool.node_reqs
                for _ in range(count):
                    self._open(t, node_reqs)

    def run(self) -> list[FilledNode]:
        self._plan()
        if self.preopen:
            self._preopen(ceil=self.preopen == "ceil")
        order = sorted(
            self.items,
            key=lambda it: (not it.seed, not it.affinity, -it.value, -sum(it.vec)),
        )
        for item in order:
            self._place(item)
        out = []
        for node in self.nodes:
            pods = self.assigned[node.idx]
            if pods:
                out.append(FilledNode(node, pods))
        return self._split_underfilled(out)

    def release(self) -> None:
        """Drop the caches and heaps; only the nodes and their pods are kept."""
        self._bucket_ok.clear()
        self.buckets.clear()
        self._ff_nodes = []
        self.sigs.clear()

    def cost(self, nodes: Sequence[FilledNode]) -> float:
        """What the nodes would cost, each at the cheapest type that holds its pods."""
        return sum(self._cheapest_holding(node, node.used) for node, _ in nodes)

    # ---- splitting ----------------------------------------------------------------------------

    def _cheapest_holding(self, node: OpenNode, used: Sequence[int]) -> float:
        prices = self.pool.prices(node.reqs)
        best = math.inf
        for t in bits(node.mask):
            a = self.pool.alloc[t]
            if prices[t] < best and all(u <= c for u, c in zip(used, a, strict=True)):
                best = prices[t]
        return best

    def _split_underfilled(
        self, nodes: list[FilledNode]
    ) -> list[FilledNode]:
        """Re-pack the pods of poorly filled nodes onto several smaller nodes when cheaper.

        The last nodes of a batch hold what is left over; one node big enough for all of it can
        cost more than two smaller ones (10.7 vCPU: a 16x, or an 8x and a 4x). Greedily pick the
        type whose first-fit load is worth the most per price, repeat on what is left, and keep
        the result if it is cheaper. Only nodes without hostname or port constraints qualify.
        """
        pool = self.pool
        if not nodes:
            return nodes
        scored: list[tuple[float, int]] = []
        for i, (node, _pods) in enumerate(nodes):
            if any(item.constrained for item, _ in node.contents):
                continue
            price = self._cheapest_holding(node, node.used)
            if not math.isfinite(price):
                continue
            scored.append((self._fill(node), i))
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
                ((self._value(vec_of[id(p)]), vec_of[id(p)], p) for p in pods),
                key=lambda e: -e[0],
            )
            current = self._cheapest_holding(node, node.used)
            plan = self._greedy_split(node, entries)
            if plan is None:
                continue
            cost = sum(price for price, _, _ in plan)
            if cost < current - 1e-9:
                out = []
                for _, used, group in plan:
                    new = OpenNode(
                        len(self.nodes),
                        node.reqs,
                        node.sig,
                        node.target,
                        pool.alloc[node.target],
                        node.mask,
                    )
                    new.used = list(used)
                    self.nodes.append(new)
                    out.append(FilledNode(new, group))
                replaced[i] = out
        if not replaced:
            return nodes
        result: list[FilledNode] = []
        for i, entry in enumerate(nodes):
            result.extend(replaced.get(i, [entry]))
        return result

    def _value(self, vec: tuple[int, ...]) -> float:
        return sum(d * v for d, v in zip(self.duals, vec, strict=True)) or float(sum(vec))

    def _fill(self, node: OpenNode) -> float:
        price = self._cheapest_holding(node, node.used)
        worth = self._value(tuple(node.used))
        return worth / price if price > 0 and math.isfinite(price) else 1.0

    def _greedy_split(
        self, node: OpenNode, entries: list[tuple[float, tuple[int, ...], PodView]]
    ) -> list[tuple[float, list[int], list[PodView]]] | None:
        pool = self.pool
        prices = pool.prices(node.reqs)
        current = self._cheapest_holding(node, node.used)
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
        plan: list[tuple[float, list[int], list[PodView]]] = []
        while remaining:
            best: tuple[float, int, list[int], list[int]] | None = None
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
                if best is None or ratio > best[0] + 1e-12:
                    best = (ratio, t, used, taken)
            if best is None:
                return None
            _, t, used, taken = best
            chosen = set(taken)
            plan.append((prices[t], used, [remaining[j][2] for j in taken]))
            remaining = [e for j, e in enumerate(remaining) if j not in chosen]
            if len(plan) > 64:
                return None
        return plan
