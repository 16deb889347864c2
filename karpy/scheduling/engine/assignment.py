"""Assigning the pods bound for new capacity to new nodes, pool by pool, within limits.

Pass 1 bound every pod that no existing node took to a pool (new_capacity.py). Here each pool's
pods are packed for the whole batch by the cost-aware packer (several ways, the cheapest plan
kept), each node gets the instance types that hold its pods, and a pool's limits are applied
(limits.py): nodes whose cheapest type no longer fits are refused, their pods packed again onto
smaller types a few rounds, and what is still refused goes on to the next pool that can take it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from karpy.scheduling.engine import limits
from karpy.scheduling.engine.claims import PackedNode, instance_types_for
from karpy.scheduling.engine.domains import Topology
from karpy.scheduling.engine.new_capacity import NewCapacity, Unit
from karpy.scheduling.engine.packer import FilledNode, Item, OpenNode, Packer
from karpy.scheduling.engine.pool_limits import PoolLimits, consume, mask_within
from karpy.scheduling.engine.pools import PoolContext
from karpy.scheduling.engine.topology import AFFINITY, ANTI, SPREAD
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import PodView

__all__ = ["Assignment"]

# How many times the pods of new nodes a pool's limits refused are packed again onto smaller
# types that fit what is left.
_LIMIT_ROUNDS = 4
# Batches up to these sizes per pool are also packed in more expensive ways (see packer.py).
_FIRST_FIT_LIMIT = 2000
_LARGE_BATCH = 5000


class _Spilled(NamedTuple):
    """Pods of a unit that their node could not keep."""

    unit: Unit
    pods: list[PodView]


class _Typed(NamedTuple):
    """A packed node with the instance types it lists."""

    node: OpenNode
    pods: list[PodView]
    types: list[InstanceType]
    relaxed: bool


class _Accepted(NamedTuple):
    """A node a limited pool accepted, with the indices of the types trimming must keep."""

    typed: _Typed
    keep: list[int]


class _Variant(NamedTuple):
    """One way of packing a pool (see packer.py)."""

    first_fit: bool
    aligned: bool
    preopen: str  # open the LP's nodes up front: "floor", "ceil", "global" or "" (none)


class _Packing(NamedTuple):
    failed: int
    cost: float
    items: list[Item]
    nodes: list[FilledNode]


class Assignment:
    """Pass 2 of one solve: the new nodes for the units of every pool."""

    def __init__(
        self,
        pools: Sequence[PoolContext],
        topology: Topology,
        pool_limits: PoolLimits,
        new_capacity: NewCapacity,
        errors: dict[str, str],
        *,
        max_instance_types: int,
        strict_min_values: bool,
    ) -> None:
        self.pools = pools
        self.topology = topology
        self.limits = pool_limits
        self.new_capacity = new_capacity
        self.errors = errors
        self.max_instance_types = max_instance_types
        self.strict_min_values = strict_min_values
        # whether a pool's limits sent pods elsewhere (zonal spreads may need repair)
        self.limits_spilled = False

    def pack_pools(self) -> list[PackedNode]:
        """The new nodes of every pool, in pool order; pods a pool's limits refused move on to
        the next pool that can take them (their domains kept)."""
        by_pool: dict[int, list[Unit]] = {}
        for u in self.new_capacity.units.values():
            by_pool.setdefault(u.pool, []).append(u)
        out: list[PackedNode] = []
        for pool in self.pools:
            units = by_pool.get(pool.index)
            if not units:
                continue
            spilled: list[_Spilled] = []
            remaining = self.limits.remaining[pool.index]
            if remaining is None:
                out.extend(
                    PackedNode(pool, t.node, t.pods, t.types, t.relaxed)
                    for t in self._pack_round(pool, units, spilled)
                )
            else:
                out.extend(self._pack_limited(pool, units, remaining, spilled))
            for unit, pods in _regroup(spilled):
                self._reassign(unit, pods, pool.index + 1, by_pool)
        return out

    def _pack_round(
        self, pool: PoolContext, units: list[Unit], spilled: list[_Spilled]
    ) -> list[_Typed]:
        """Pack units onto new nodes of the pool and list each node's instance types; pods of
        nodes no type can hold go to `spilled`."""
        items, nodes = self._best_packing(pool, units)
        for item in items:
            for p in item.failed:
                self.errors[p.key] = (
                    f'incompatible with nodepool "{pool.name}": no node could hold it '
                    "together with the pods its hostname affinity selects"
                )
        unit_of = {id(p): u for u in units for p in u.pods}
        out = []
        for node, pods in nodes:
            choice = instance_types_for(
                pool,
                node,
                max_types=self.max_instance_types,
                strict_min_values=self.strict_min_values,
            )
            if not choice.types:
                self._spill(pods, unit_of, spilled, choice.reason)
                continue
            out.append(_Typed(node, pods, choice.types, choice.relaxed))
        return out

    def _pack_limited(
        self,
        pool: PoolContext,
        units: list[Unit],
        remaining: dict[str, int],
        spilled: list[_Spilled],
    ) -> list[PackedNode]:
        """Pack a pool with limits (see limits.py): nodes are accepted in order while their
        cheapest types fit in what is left; the pods of refused nodes are packed again onto
        types that fit what is left, a few rounds; then the accepted lists are trimmed from the
        top until their largest types fit the remaining limits."""
        resources = sorted(k for k in remaining if k != limits.NODES)
        left = dict(remaining)
        accepted: list[_Accepted] = []
        todo = units
        for _ in range(_LIMIT_ROUNDS):
            refused: list[_Spilled] = []
            unit_of = {id(p): u for u in todo for p in u.pods}
            progress = False
            for typed in self._pack_round(pool, todo, spilled):
                keep = limits.floor(
                    typed.types,
                    typed.node.reqs,
                    resources=resources,
                    strict_min_values=self.strict_min_values,
                )
                need = limits.peak(typed.types, keep, left)
                short = limits.shortfall(need, left)
                if short is not None:
                    self._spill(
                        typed.pods,
                        unit_of,
                        refused,
                        limits.refusal(pool.name, short, need=need, left=left),
                    )
                    continue
                for name, amount in need.items():
                    left[name] -= amount
                for p in typed.pods:
                    self.errors.pop(p.key, None)
                accepted.append(_Accepted(typed, keep))
                progress = True
            todo = []
            if progress:
                mask = mask_within(pool, left)
                for unit, pods in _regroup(refused):
                    if mask & unit.mask and not any(t.is_hostname for t in unit.eff.affinity):
                        todo.append(
                            Unit(
                                cls=unit.cls,
                                eff=unit.eff,
                                pool=unit.pool,
                                reqs=unit.reqs,
                                mask=unit.mask & mask,
                                pods=pods,
                            )
                        )
                    else:
                        spilled.append(_Spilled(unit, pods))
            else:
                spilled.extend(refused)
            if not todo:
                break
        else:
            spilled.extend(_Spilled(u, u.pods) for u in todo)  # errors say why: the limits
        trimmed = limits.trim(
            [a.typed.types for a in accepted], [a.keep for a in accepted], remaining
        )
        out: list[PackedNode] = []
        for (typed, _keep), kept in zip(accepted, trimmed, strict=True):
            relaxed = typed.relaxed
            if len(kept) < len(typed.types) and not self.strict_min_values:
                relaxed = limits.min_values_shortfall(typed.node.reqs, kept) is not None
            out.append(PackedNode(pool, typed.node, typed.pods, kept, relaxed))
            consume(remaining, kept)
        return out

    def _best_packing(
        self, pool: PoolContext, units: list[Unit]
    ) -> tuple[list[Item], list[FilledNode]]:
        """Pack the pool's pods several ways and keep the cheapest plan (see packer.py)."""
        pods = sum(len(u.pods) for u in units)
        variants = [_Variant(False, False, "floor"), _Variant(False, False, "ceil")]
        if pods <= _LARGE_BATCH:
            variants.insert(1, _Variant(True, False, "floor"))
        if pods <= _FIRST_FIT_LIMIT:
            variants += [
                _Variant(False, False, "global"),
                _Variant(True, False, "global"),
                _Variant(False, False, ""),
                _Variant(False, True, ""),
            ]
        best: _Packing | None = None
        for variant in variants:
            items, floor = self._items(units)
            if variant.aligned and floor > _FIRST_FIT_LIMIT // 10:
                continue  # thousands of single-pod nodes: scanning them all per pod is too slow
            if variant.preopen == "ceil" and best is not None and len(best.nodes) >= 100:
                continue  # rounding up one node in a hundred cannot pay off

            packer = Packer(
                pool,
                items,
                floor=floor,
                first_fit=variant.first_fit,
                aligned=variant.aligned,
                preopen=variant.preopen,
            )
            nodes = packer.run()
            failed = sum(len(i.failed) for i in items)
            cost = packer.cost(nodes)
            packer.release()
            if best is None or (failed, cost) < (best.failed, best.cost - 1e-9):
                best = _Packing(failed, cost, items, nodes)
        assert best is not None
        return best.items, best.nodes

    def _items(self, units: list[Unit]) -> tuple[list[Item], int]:
        """The packer's items for the units (hostname terms as group ids), and the node floor
        their hostname anti-affinity and spreads impose."""
        topology = self.topology
        items: list[Item] = []
        # per hostname term (group id): pods of the units it selects that it also constrains
        anti_pods: dict[int, int] = {}
        spread_pods: dict[int, int] = {}
        for u in units:
            pod = u.cls.pod
            ns = pod.namespace
            matched = tuple(g.id for g in u.cls.matched if g.is_hostname)
            anti = tuple(topology.group(ANTI, t, ns).id for t in u.eff.anti if t.is_hostname)
            spread = tuple(
                (topology.group(SPREAD, s, ns).id, s.max_skew)
                for s in u.eff.spreads
                if s.is_hostname
            )
            affinity = tuple(
                topology.group(AFFINITY, t, ns).id for t in u.eff.affinity if t.is_hostname
            )
            seed = any(t in matched for t in anti)
            for t in anti:
                if t in matched:
                    anti_pods[t] = anti_pods.get(t, 0) + len(u.pods)
            for t, _skew in spread:
                if t in matched:
                    spread_pods[t] = spread_pods.get(t, 0) + len(u.pods)
            items.append(
                Item(
                    vec=u.cls.vec,
                    reqs=u.reqs,
                    mask=u.mask,
                    pods=u.pods,
                    matched=matched,
                    anti=anti,
                    spread=spread,
                    affinity=affinity,
                    ports=pod.host_ports,
                    seed=seed,
                )
            )
        # k pods that repel each other need k nodes; n pods spread with maxSkew s, n/s nodes
        floor = max(anti_pods.values(), default=0)
        skews = {s_id: skew for it in items for s_id, skew in it.spread}
        for t, n in spread_pods.items():
            floor = max(floor, math.ceil(n / skews.get(t, 1)))
        return items, floor

    def _spill(
        self,
        pods: list[PodView],
        unit_of: dict[int, Unit],
        spilled: list[_Spilled],
        why: str,
    ) -> None:
        self.limits_spilled = True
        for p in pods:
            self.errors[p.key] = why
            spilled.append(_Spilled(unit_of[id(p)], [p]))

    def _reassign(
        self, unit: Unit, pods: list[PodView], first_pool: int, by_pool: dict[int, list[Unit]]
    ) -> None:
        """Pods a pool's limits refused go to the next pool that can take them, pins kept."""
        for pool in self.pools[first_pool:]:
            fit = self.new_capacity.pool_fit(pool, unit.cls, unit.eff)
            if isinstance(fit, str):
                continue
            reqs = unit.reqs
            if pool.node_reqs.compatible(reqs, well_known=pool.well_known) is not None:
                continue
            mask = (
                pool.fit_mask(pool.node_reqs.union(reqs), unit.cls.vec)
                & pool.port_mask(unit.cls.pod.host_ports)
                & self.limits.masks[pool.index]
            )
            if not mask:
                continue
            for p in pods:
                self.errors.pop(p.key, None)
            by_pool.setdefault(pool.index, []).append(
                Unit(cls=unit.cls, eff=unit.eff, pool=pool.index, reqs=reqs, mask=mask, pods=pods)
            )
            return


def _regroup(spilled: list[_Spilled]) -> list[_Spilled]:
    """Spilled pods back together per unit, in the order the units first spilled."""
    grouped: dict[int, _Spilled] = {}
    for u, pods in spilled:
        got = grouped.setdefault(id(u), _Spilled(u, []))
        got.pods.extend(pods)
    return list(grouped.values())
