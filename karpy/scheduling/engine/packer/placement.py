"""Placing a pool's items on new nodes: the packer itself (see the package docstring).

Nodes are kept in heaps by (requirement signature, target type), least loaded first, so the
balanced fit asks one node per bucket; first fit scans the open nodes in opening order, and
pods whose hostname affinity selects other pods go where those pods are.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from karpy.scheduling.engine.packer.items import (
    FilledNode,
    Item,
    Merged,
    OpenNode,
    alignment,
    load_after,
    room,
)
from karpy.scheduling.engine.packer.plan import PoolPlan, lp_nodes, plan_pool, solve_items
from karpy.scheduling.engine.packer.split import cheapest_holding, split_underfilled
from karpy.scheduling.engine.pools import PoolContext, bits
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirements

__all__ = ["Packer"]

# How many open nodes may refuse one item (identical pods) before new nodes are opened for it.
_MAX_REJECTIONS = 4096


# A node in its bucket's heap: (load, node idx, node version, push sequence); stale once the
# node's version has moved on. A plain tuple: one is pushed per pod placed, and heapq compares
# tuples in C.
_HeapEntry = tuple[float, int, int, int]


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
        self.sig_merged: list[Merged] = []  # per signature, shared by every answer naming it
        self.buckets: dict[tuple[int, int], list[_HeapEntry]] = {}
        self._bucket_ok: dict[tuple[int, int, Requirements], int] = {}
        self._seq = 0
        self.affinity_nodes: dict[int, list[OpenNode]] = {}
        # assignments: node idx -> list of pods
        self.assigned: dict[int, list[PodView]] = {}
        dims = len(pool.dims.names)
        self.plan = PoolPlan(duals=(0.0,) * dims)
        self._ff_nodes: list[OpenNode] = []
        self._min_vec = tuple(
            min((it.vec[r] for it in self.items if it.vec[r] > 0), default=0) for r in range(dims)
        )
        for item in self.items:
            for t in item.affinity:
                self.affinity_nodes.setdefault(t, [])

    def _sig(self, reqs: Requirements) -> int:
        got = self.sigs.get(reqs)
        if got is None:
            got = len(self.sig_reqs)
            self.sigs[reqs] = got
            self.sig_reqs.append(reqs)
            self.sig_merged.append(Merged(got, reqs))
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

    def _merged_key(self, bucket: tuple[int, int], item: Item) -> Merged | None:
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
        return self.sig_merged[got]

    def _merged(self, node: OpenNode, item: Item) -> Merged | None:
        """The node's signature after taking `item`, or None when they are incompatible."""
        return self._merged_key((node.sig, node.target), item)

    def _add(self, node: OpenNode, item: Item, k: int, merged: Merged) -> None:
        """Put `k` pods of the item on the node: its usage, requirements, allowed types,
        hostname-term counts and load follow."""
        used = node.used
        for r, v in enumerate(item.vec):
            if v:
                used[r] += v * k
        if merged.sig != node.sig:
            node.sig = merged.sig
            node.reqs = merged.reqs
            node.mask &= self.pool.compatible_mask(merged.reqs)
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

    # ---- placement --------------------------------------------------------------------------

    def _new_node_target(self, item: Item) -> int | None:
        for t in self.plan.ranking:
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
                k = room(node, item, want)
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
            k = room(node, item, want) if merged is not None else 0
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
            best_merged: Merged | None = None
            best_key = (0.0, 0.0)
            for node in self.nodes:
                merged = self._merged(node, item)
                if merged is None or room(node, item, 1) <= 0:
                    continue
                if not self.aligned:
                    best, best_merged = node, merged
                    break
                # best aligned, then fullest (best fit)
                key = (-round(alignment(node, item), 2), -load_after(node, item))
                if best is None or key < best_key:
                    best, best_merged, best_key = node, merged, key
            if best is not None and best_merged is not None:
                self._add(best, item, room(best, item, want), best_merged)
            else:
                target = self._new_node_target(item)
                fresh = self._open(target, self.pool.node_reqs) if target is not None else None
                merged = self._merged(fresh, item) if fresh is not None else None
                if fresh is None or merged is None or room(fresh, item, 1) <= 0:
                    item.failed.extend(item.pods[item.placed :])
                    item.placed = total
                    return
                self._add(fresh, item, room(fresh, item, want), merged)

    def _place_first_fit_fast(self, item: Item) -> None:
        """First fit decreasing. Nodes that can no longer take the smallest pod of the batch
        leave the scan list, and the scan for one item resumes where its last pod went (the
        nodes before refused it and still do), so the work stays near linear."""
        total = len(item.pods)
        nodes = self._ff_nodes
        start = 0
        cache: dict[tuple[int, int], Merged | None] = {}
        while item.placed < total:
            want = total - item.placed
            found = -1
            merged: Merged | None = None
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
                if fresh is None or merged is None or room(fresh, item, 1) <= 0:
                    item.failed.extend(item.pods[item.placed :])
                    item.placed = total
                    break
                found = len(nodes) - 1
            node = nodes[found]
            self._add(node, item, room(node, item, want), merged)
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
        """Place every pod of the item: balanced fit (the default) puts each pod on the
        least-loaded compatible open node, one bucket head at a time; nodes that refuse the
        item are set aside (up to a bound, then new nodes open) and pushed back afterwards."""
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
        merged_by_bucket: dict[tuple[int, int], Merged | None] = {}
        while item.placed < total:
            best: OpenNode | None = None
            best_merged: Merged | None = None
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
                    _load, idx, version, _seq = heap[0]
                    node = self.nodes[idx]
                    if node.version != version or idx in rejected_ids:
                        heapq.heappop(heap)
                        continue
                    if room(node, item, 1) <= 0:
                        heapq.heappop(heap)
                        rejected.append(node)
                        rejected_ids.add(idx)
                        refusals += 1
                        if refusals > _MAX_REJECTIONS:
                            break
                        continue
                    score = load_after(node, item)
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
                if best_merged is None or room(best, item, 1) <= 0:
                    # even an empty node of the best type refuses it: try any type that fits
                    fallback = self._fallback_target(item)
                    if fallback is None:
                        item.failed.extend(item.pods[item.placed :])
                        item.placed = total
                        break
                    best.target = fallback
                    best.cap = self.pool.alloc[fallback]
                    best_merged = self._merged(best, item)
                    if best_merged is None or room(best, item, 1) <= 0:
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
            for t, count in lp_nodes(pool, self.plan.lp_x, self.plan.ranking, ceil=ceil):
                for _ in range(count):
                    self._open(t, pool.node_reqs)
            return
        for reqs, items in parts.items():
            sol = solve_items(pool, items, self.floor)
            if sol is None:
                continue
            merged = pool.node_reqs.union(reqs)
            compat = pool.compatible_mask(merged)
            for t, count in lp_nodes(pool, sol.x, self.plan.ranking, ceil=ceil):
                node_reqs = merged if (compat >> t) & 1 else pool.node_reqs
                for _ in range(count):
                    self._open(t, node_reqs)

    def run(self) -> list[FilledNode]:
        """Plan, open the LP's nodes (per the variant), place every item, split the poorly
        filled nodes; the nodes with pods, in opening order."""
        self.plan = plan_pool(self.pool, self.items, self.floor)
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
        return split_underfilled(self.pool, out, self.plan.duals, self.nodes)

    def release(self) -> None:
        """Drop the caches and heaps; only the nodes and their pods are kept."""
        self._bucket_ok.clear()
        self.buckets.clear()
        self._ff_nodes = []
        self.sigs.clear()

    def cost(self, nodes: Sequence[FilledNode]) -> float:
        """What the nodes would cost, each at the cheapest type that holds its pods."""
        return sum(cheapest_holding(self.pool, node, node.used) for node, _ in nodes)
