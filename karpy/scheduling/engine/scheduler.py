"""The scheduler: decide where every pending pod goes and which nodes to launch.

It follows Karpenter's decisions where users can see them and packs better where they cannot:

* Pods are grouped into classes of identical pods (requests, labels and constraints) and taken
  in Karpenter's queue order: CPU descending, then memory, then age (podclasses.py).
* Each pod tries existing nodes first (initialized ones first, then by name;
  existing_placement.py), then new capacity from the NodePools in weight order (ties by name,
  descending): the first pool whose taints, requirements, instance types, DaemonSet overhead
  and limits allow it wins (new_capacity.py, pool_limits.py).
* Preferences (preferred affinities, ScheduleAnyway spreads, PreferNoSchedule taints) are
  treated as required and relaxed one at a time in Karpenter's order when a pod cannot be placed
  (preferences.py).
* Topology domains (zones, ...) are chosen per pod exactly as Karpenter does (the valid domain
  with the fewest matching pods), and pinned; pods that other pods' spread or (anti-)affinity
  select are pinned too, so the counts stay exact and affinity can follow them (domains.py).
* Which nodes to launch for the pods bound to new capacity is decided per NodePool for the whole
  batch by the cost-aware packer (assignment.py, packer.py), not pod by pod; the packed nodes
  become NodeClaims (claims.py).

Every plan comes with a lower bound on the cost of any plan (`lowerbound.py`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from karpy.scheduling.engine import exact
from karpy.scheduling.engine.assignment import Assignment
from karpy.scheduling.engine.claims import ClaimBuilder
from karpy.scheduling.engine.domains import Topology
from karpy.scheduling.engine.existing import ExistingNodes
from karpy.scheduling.engine.existing_placement import ExistingPlacement
from karpy.scheduling.engine.lowerbound import PlacedClass, lower_bound
from karpy.scheduling.engine.model import NewNodeClaim, SchedulingInput, SchedulingResult
from karpy.scheduling.engine.new_capacity import Leftover, NewCapacity
from karpy.scheduling.engine.podclasses import PodClass, pod_classes
from karpy.scheduling.engine.pool_limits import PoolLimits
from karpy.scheduling.engine.pools import Dims, PoolContext
from karpy.scheduling.engine.preferences import Preferences
from karpy.scheduling.engine.spread_repair import repair_spread
from karpy.scheduling.pods import PodView
from karpy.scheduling.resources import CPU, MEMORY, PODS

__all__ = ["Scheduler", "schedule"]


def schedule(inp: SchedulingInput) -> SchedulingResult:
    """Schedule a snapshot. Pure and deterministic: the same input gives the same plan
    (small batches also get the exact planner, whose search stops at deterministic work limits
    or at the time budget in CPU seconds, which the heuristic's own time counts against; the
    result's `exact` says when the clock cut it). Batches it cannot take whole, too large or
    not modelled, get their most wasteful nodes re-packed exactly (`exact.repack`, a few
    groups of at most `repacking.GROUP_SECONDS` each)."""
    started = exact.Budget.start(inp.exact_seconds)
    result = Scheduler(inp).solve()
    if inp.exact_seconds <= 0:
        return result
    if len(inp.pods) <= exact.MAX_PODS:
        result = exact.improve(inp, result, started=started)
        if result.exact.startswith("not modelled"):
            result = exact.repack(inp, result, started=started)
    else:
        result = dataclasses.replace(result, exact=f"batch larger than {exact.MAX_PODS} pods")
        result = exact.repack(inp, result, started=started)
    return result


class Scheduler:
    """One solve. Build it with a `SchedulingInput`, call `solve()` once."""

    def __init__(self, inp: SchedulingInput) -> None:
        # the solve's time counts from here: grouping pods into classes and preparing pools,
        # nodes and topology is as much part of it as the passes `solve()` runs
        self.started = time.perf_counter()
        self.inp = inp
        self.ignore_prefs = inp.preference_policy == "Ignore"
        names = {CPU, MEMORY, PODS}
        for p in inp.pods:
            names.update(p.requests)
        for d in inp.daemonset_pods:
            names.update(d.requests)
        self.dims = Dims(sorted(names))
        ordered = sorted(inp.templates, key=lambda t: (t.weight, t.name), reverse=True)
        self.pools = [
            PoolContext(t, index=i, dims=self.dims, daemons=inp.daemonset_pods)
            for i, t in enumerate(ordered)
        ]
        self.any_pns = any(p.has_prefer_no_schedule for p in self.pools)
        self.limits = PoolLimits(self.pools, inp)
        self.cluster = ExistingNodes(inp.existing_nodes, dims=self.dims, daemons=inp.daemonset_pods)
        self.classes, self.errors = pod_classes(inp.pods, self.dims)
        self.pool_errors: dict[str, dict[str, str]] = {}
        self.topology = Topology(self.classes, self.cluster.nodes, self.pools, inp.namespace_labels)
        self.on_existing = ExistingPlacement(self.cluster, self.topology, inp.namespace_labels)
        self.new_capacity = NewCapacity(self.pools, self.dims, self.limits, self.topology)
        self.assignment = Assignment(
            self.pools,
            self.topology,
            self.limits,
            self.new_capacity,
            self.errors,
            max_instance_types=inp.max_instance_types,
            strict_min_values=inp.min_values_policy == "Strict",
        )

    def solve(self) -> SchedulingResult:
        """Pass 1 binds every pod to an existing node or a pool, relaxing preferences as
        needed (failures retried while that places more, as Karpenter re-queues them); pass 2
        packs each pool's pods onto new nodes; the plan comes with its cost and a lower bound."""
        failed: list[tuple[PodClass, list[PodView]]] = []
        for cls in self.classes:
            left = self._schedule_class(cls, cls.pods)
            if left.pods:
                failed.append((cls, left.pods))
                for p in left.pods:
                    self.errors[p.key] = left.reason
                    self.pool_errors[p.key] = dict(left.by_pool)
        # Karpenter re-queues failures while the queue makes progress: a later pod may have
        # made room or given a pod's affinity its target (which may itself be waiting).
        while failed:
            again: list[tuple[PodClass, list[PodView]]] = []
            for cls, pods in failed:
                left = self._schedule_class(cls, pods)
                if left.pods:
                    again.append((cls, left.pods))
                placed = {id(p) for p in pods} - {id(p) for p in left.pods}
                for p in pods:
                    if id(p) in placed:
                        self.errors.pop(p.key, None)
                        self.pool_errors.pop(p.key, None)
                    elif left.reason:
                        self.errors[p.key] = left.reason
                        self.pool_errors[p.key] = dict(left.by_pool)
            if sum(len(p) for _, p in again) == sum(len(p) for _, p in failed):
                break
            failed = again
        packed = self.assignment.pack_pools()
        if self.assignment.limits_spilled:
            packed = repair_spread(
                packed,
                existing=self.cluster.nodes,
                placed_on_existing=self.on_existing.placed,
                topology=self.topology,
                dims=self.dims,
                errors=self.errors,
            )
        builder = ClaimBuilder(self.dims)
        claims = [builder.build(p) for p in packed if p.pods]
        bound = lower_bound(
            self._placed_classes(claims),
            pools=self.pools,
            existing_free=[e.initial_free for e in self.cluster.nodes],
            resources=len(self.dims.names),
        )
        return SchedulingResult(
            node_claims=claims,
            existing={k: v for k, v in self.on_existing.placed.items() if v},
            errors=dict(self.errors),
            pool_errors={k: v for k, v in self.pool_errors.items() if k in self.errors},
            cost=sum(c.price for c in claims),
            lower_bound=bound,
            seconds=time.perf_counter() - self.started,
        )

    def _schedule_class(self, cls: PodClass, pods: list[PodView]) -> Leftover:
        """Existing nodes, then new capacity, at each relaxation step until every pod is
        placed or nothing is left to relax."""
        prefs = Preferences(cls.pod, ignore=self.ignore_prefs)
        remaining = pods
        while True:
            eff = prefs.effective()
            topo = self.topology.for_class(cls, eff)
            if self.cluster:
                remaining = self.on_existing.place(cls, eff, topo, remaining)
            if not remaining:
                return Leftover([], "")
            left = self.new_capacity.place(cls, eff, topo, remaining)
            if not left.pods:
                return Leftover([], "")
            remaining = left.pods
            if not prefs.relax(prefer_no_schedule_pools=self.any_pns):
                return left

    def _placed_classes(self, claims: Sequence[NewNodeClaim]) -> list[PlacedClass]:
        """The classes the plan placed, in the order their pods first appear in it."""
        class_of = {id(p): c for c in self.classes for p in c.pods}
        counts: dict[int, int] = {}
        on_new: set[int] = set()
        for claim in claims:
            for p in claim.pods:
                c = class_of[id(p)]
                counts[c.id] = counts.get(c.id, 0) + 1
                on_new.add(c.id)
        for pods in self.on_existing.placed.values():
            for p in pods:
                c = class_of[id(p)]
                counts[c.id] = counts.get(c.id, 0) + 1
        by_id = {c.id: c for c in self.classes}
        return [
            PlacedClass(by_id[cid].pod, by_id[cid].vec, n, cid in on_new)
            for cid, n in counts.items()
        ]
