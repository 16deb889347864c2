"""The scheduler: decide where every pending pod goes and which nodes to launch.

It follows Karpenter's decisions where users can see them and packs better where they cannot:

* Pods are grouped into classes of identical pods (requests, labels and constraints) and taken
  in Karpenter's queue order: CPU descending, then memory, then age.
* Each pod tries existing nodes first (initialized ones first, then by name), then new capacity
  from the NodePools in weight order (ties by name, descending): the first pool whose taints,
  requirements, instance types, DaemonSet overhead and limits allow it wins.
* Preferences (preferred affinities, ScheduleAnyway spreads, PreferNoSchedule taints) are
  treated as required and relaxed one at a time in Karpenter's order when a pod cannot be placed.
* Topology domains (zones, ...) are chosen per pod exactly as Karpenter does (the valid domain
  with the fewest matching pods), and pinned; pods that other pods' spread or anti-affinity
  select are pinned too, so the counts stay exact.
* Which nodes to launch for the pods bound to new capacity is decided per NodePool for the whole
  batch by the cost-aware packer (`packer.py`), not pod by pod.

Every plan comes with a lower bound on the cost of any plan (`lowerbound.py`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
)
from karpy.scheduling.engine import limits
from karpy.scheduling.engine.existing import Admission, ExistingNodes, NodeView
from karpy.scheduling.engine.lowerbound import PlacedClass, lower_bound
from karpy.scheduling.engine.model import (
    NewNodeClaim,
    SchedulingInput,
    SchedulingResult,
)
from karpy.scheduling.engine.packer import Item, OpenNode, Packer
from karpy.scheduling.engine.pools import Dims, PoolContext, bits
from karpy.scheduling.engine.topology import AFFINITY, ANTI, SPREAD, Group, GroupKey, group_key
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import DO_NOT_SCHEDULE, AffinityTerm, PodView, SpreadConstraint
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import CPU, MEMORY, PODS, format_resources
from karpy.scheduling.taints import Toleration, untolerated

__all__ = ["Scheduler", "schedule"]

_PNS = Toleration(operator="Exists", effect=TAINT_EFFECT_PREFER_NO_SCHEDULE)
_NODES = limits.NODES
# How many times the pods of new nodes a pool's limits refused are packed again onto smaller
# types that fit what is left.
_LIMIT_ROUNDS = 4
# Batches up to these sizes per pool are also packed in more expensive ways (see packer.py).
_FIRST_FIT_LIMIT = 2000
_LARGE_BATCH = 5000


def schedule(inp: SchedulingInput) -> SchedulingResult:
    """Schedule a snapshot. Pure and deterministic: the same input gives the same plan."""
    return Scheduler(inp).solve()


# ---- per-class state ---------------------------------------------------------------------------


class _Class:
    """Identical pending pods."""

    __slots__ = ("id", "matched", "pod", "pods", "vec")

    def __init__(self, cid: int, pods: list[PodView], vec: tuple[int, ...]) -> None:
        self.id = cid
        self.pods = pods
        self.pod = pods[0]
        self.vec = vec
        self.matched: list[Group] = []


@dataclass(eq=False)
class _Eff:
    """A class's constraints at one relaxation step (preferences count as required)."""

    alternatives: list[Requirements]
    tolerations: tuple[Toleration, ...]
    spreads: tuple[SpreadConstraint, ...]
    affinity: tuple[AffinityTerm, ...]
    anti: tuple[AffinityTerm, ...]
    required_anti: tuple[AffinityTerm, ...]

    @property
    def admission(self) -> Admission:
        """What decides whether an existing node's labels and taints admit the class."""
        return (tuple(self.alternatives), self.tolerations)


class _Prefs:
    """What is left to relax for a class, in Karpenter's order."""

    def __init__(self, pod: PodView, *, ignore: bool) -> None:
        self.pod = pod
        self.term_offset = 0
        self.pref_affinity = [] if ignore else list(pod.preferred_affinity)
        self.pref_anti = [] if ignore else list(pod.preferred_anti_affinity)
        self.pref_node = [] if ignore else [r for _, r in pod.preferred_node_terms]
        self.anyway = (
            [] if ignore else [s for s in pod.spread if s.when_unsatisfiable != DO_NOT_SCHEDULE]
        )
        self.tolerate_pns = ignore

    def effective(self) -> _Eff:
        pod = self.pod
        terms = list(pod.required_terms[self.term_offset :]) or [Requirements()]
        base = pod.node_selector.union(terms[0])
        if self.pref_node:
            base = base.union(self.pref_node[0])
        vols = list(pod.volume_terms) or [Requirements()]
        alternatives = [base.union(v) for v in vols]
        tolerations = pod.tolerations + ((_PNS,) if self.tolerate_pns else ())
        spreads = tuple(s for s in pod.spread if s.when_unsatisfiable == DO_NOT_SCHEDULE) + tuple(
            self.anyway
        )
        return _Eff(
            alternatives=alternatives,
            tolerations=tolerations,
            spreads=spreads,
            affinity=pod.affinity + tuple(self.pref_affinity),
            anti=pod.anti_affinity + tuple(self.pref_anti),
            required_anti=pod.anti_affinity,
        )

    def relax(self, *, prefer_no_schedule_pools: bool) -> bool:
        if len(self.pod.required_terms) - self.term_offset > 1:
            self.term_offset += 1
            return True
        if self.pref_affinity:
            self.pref_affinity.pop(0)
            return True
        if self.pref_anti:
            self.pref_anti.pop(0)
            return True
        if self.pref_node:
            self.pref_node.pop(0)
            return True
        if self.anyway:
            self.anyway.pop(0)
            return True
        if prefer_no_schedule_pools and not self.tolerate_pns:
            self.tolerate_pns = True
            return True
        return False


@dataclass(eq=False)
class _Topo:
    """The groups one class's placement must respect, by topology key."""

    keys: tuple[str, ...]  # non-hostname keys to pin
    spread: dict[str, list[tuple[SpreadConstraint, Group, bool]]]
    affinity: dict[str, list[Group]]
    anti: dict[str, list[Group]]
    inverse: dict[str, list[Group]]
    balance: dict[str, list[Group]]
    hostname: bool  # any hostname-scoped constraint
    simple: bool


@dataclass(eq=False)
class _Unit:
    """Pods of one class bound for one pool with one set of (pinned) requirements."""

    cls: _Class
    eff: _Eff
    pool: int
    reqs: Requirements
    mask: int
    pods: list[PodView]


_Packed = tuple[PoolContext, OpenNode, list[PodView], list[InstanceType], bool]
"""A new node: its pool, the packed node, its pods, its instance types, minValues relaxed."""


# ---- the scheduler -----------------------------------------------------------------------------


class Scheduler:
    """One solve. Build it with a `SchedulingInput`, call `solve()` once."""

    def __init__(self, inp: SchedulingInput) -> None:
        self.inp = inp
        self.ignore_prefs = inp.preference_policy == "Ignore"
        self.strict_min_values = inp.min_values_policy == "Strict"
        self.ns_labels = inp.namespace_labels
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
        self.errors: dict[str, str] = {}
        self._limits_spilled = False
        self._interned: dict[tuple[object, ...], tuple[Requirement, list[InstanceType]]] = {}
        self.existing_placed: dict[str, list[PodView]] = {}
        self.units: dict[tuple[int, int, Requirements], _Unit] = {}
        self._pool_info_cache: dict[tuple[int, int, int], tuple[Requirements, int] | str] = {}
        self._eligible: dict[tuple[str, Requirements, bool, int], list[str]] = {}
        self._remaining_limits = self._initial_limits()
        self._limit_masks = [self._limit_mask(p) for p in self.pools]
        self._prepare_existing()
        self._prepare_groups_and_classes()
        self._universe = self._domain_universe()
        self._universe_sorted = {k: sorted(v) for k, v in self._universe.items()}

    # ---- preparation ----------------------------------------------------------------------

    def _initial_limits(self) -> list[dict[str, int] | None]:
        usage: dict[str, dict[str, int]] = {}
        if self.inp.pool_usage is not None:
            usage = {k: dict(v) for k, v in self.inp.pool_usage.items()}
        else:
            for n in self.inp.existing_nodes:
                if n.nodepool:
                    acc = usage.setdefault(n.nodepool, {})
                    for name, amount in (n.capacity or n.allocatable).items():
                        acc[name] = acc.get(name, 0) + amount
                    acc[_NODES] = acc.get(_NODES, 0) + 1
        out: list[dict[str, int] | None] = []
        for pool in self.pools:
            limits = pool.template.limits
            if limits is None:
                out.append(None)
                continue
            used = usage.get(pool.name, {})
            out.append({k: v - used.get(k, 0) for k, v in limits.items()})
        return out

    def _limit_mask(self, pool: PoolContext) -> int:
        remaining = self._remaining_limits[pool.index]
        return pool.all_mask if remaining is None else self._mask_within(pool, remaining)

    @staticmethod
    def _mask_within(pool: PoolContext, left: dict[str, int]) -> int:
        """The pool's types that alone fit in what is `left` of its limits."""
        if left.get(_NODES, 1) < 1:
            return 0
        mask = 0
        for i, it in enumerate(pool.types):
            if all(it.capacity.get(k, 0) <= v for k, v in left.items() if k != _NODES):
                mask |= 1 << i
        return mask

    def _prepare_existing(self) -> None:
        self.cluster = ExistingNodes(
            self.inp.existing_nodes, dims=self.dims, daemons=self.inp.daemonset_pods
        )
        self.existing = self.cluster.nodes
        for e in self.existing:
            self.existing_placed[e.node.name] = []

    def _prepare_groups_and_classes(self) -> None:
        self.groups: dict[GroupKey, Group] = {}

        def group_for(kind: str, term: AffinityTerm | SpreadConstraint, ns: str) -> Group:
            key = group_key(kind, term, ns)
            g = self.groups.get(key)
            if g is None:
                g = Group(key, len(self.groups))
                self.groups[key] = g
            return g

        by_sig: dict[tuple[object, ...], list[PodView]] = {}
        for p in self.inp.pods:
            if p.unsupported:
                self.errors[p.key] = p.unsupported
                continue
            if any(
                r.key == LABEL_NODEPOOL and r.operator == "DoesNotExist"
                for alt in p.requirement_alternatives()
                for r in alt.values()
            ):
                self.errors[p.key] = f"pod requires {LABEL_NODEPOOL} DoesNotExist"
                continue
            by_sig.setdefault(p.signature, []).append(p)
        classes: list[_Class] = []
        for pods in by_sig.values():
            pods.sort(key=lambda p: (p.created, p.uid))
            classes.append(_Class(len(classes), pods, self.dims.vec(pods[0].requests)))
        cpu = self.dims.index[CPU]
        mem = self.dims.index[MEMORY]
        classes.sort(key=lambda c: (-c.vec[cpu], -c.vec[mem], c.pod.created, c.pod.uid))
        for i, c in enumerate(classes):
            c.id = i
        self.classes = classes
        for c in classes:
            p = c.pod
            for s in p.spread:
                group_for(SPREAD, s, p.namespace)
            for t in p.affinity + p.preferred_affinity:
                group_for(AFFINITY, t, p.namespace)
            for t in p.anti_affinity + p.preferred_anti_affinity:
                group_for(ANTI, t, p.namespace)
        for e in self.existing:
            for p in e.node.pods:
                for t in p.anti_affinity:
                    g = group_for(ANTI, t, p.namespace)
                    d = e.labels.get(t.topology_key)
                    if d is not None:
                        g.add_owner(d)
        groups = list(self.groups.values())
        if groups:
            self._count_bound_pods(groups)
        for c in classes:
            c.matched = [g for g in groups if g.selects(c.pod, self.ns_labels)]

    def _count_bound_pods(self, groups: list[Group]) -> None:
        """Count the pods already on existing nodes into the groups that select them.

        Bound pods repeat a few label sets (one per workload), so each group judges each
        distinct (namespace, labels) once rather than every pod."""
        alike: dict[tuple[str, frozenset[tuple[str, str]]], tuple[PodView, dict[int, int]]] = {}
        for e in self.existing:
            for p in e.node.pods:
                key = (p.namespace, frozenset(p.labels.items()))
                got = alike.get(key)
                if got is None:
                    got = alike[key] = (p, {})
                got[1][e.idx] = got[1].get(e.idx, 0) + 1
        for g in groups:
            tk = g.topology_key
            for p, per_node in alike.values():
                if not g.selects(p, self.ns_labels):
                    continue
                for idx, n in per_node.items():
                    d = self.existing[idx].labels.get(tk)
                    if d is not None:
                        g.add(d, n)

    def _domain_universe(self) -> dict[str, dict[str, list[tuple[str, int]]]]:
        keys = {g.topology_key for g in self.groups.values() if not g.is_hostname}
        universe: dict[str, dict[str, list[tuple[str, int]]]] = {k: {} for k in keys}
        for key in keys:
            for e in self.existing:
                d = e.labels.get(key)
                if d is not None:
                    universe[key].setdefault(d, []).append(("node", e.idx))
            for pool in self.pools:
                for d in pool.domains(pool.all_mask, Requirements(), key):
                    universe[key].setdefault(d, []).append(("pool", pool.index))
        return universe

    # ---- topology ---------------------------------------------------------------------------

    def _topo(self, cls: _Class, eff: _Eff) -> _Topo:
        pod = cls.pod
        spread: dict[str, list[tuple[SpreadConstraint, Group, bool]]] = {}
        affinity: dict[str, list[Group]] = {}
        anti: dict[str, list[Group]] = {}
        inverse: dict[str, list[Group]] = {}
        balance: dict[str, list[Group]] = {}
        hostname = bool(pod.host_ports)
        for s in eff.spreads:
            g = self.groups[group_key(SPREAD, s, pod.namespace)]
            spread.setdefault(s.topology_key, []).append((s, g, s.selector.matches(pod.labels)))
        for t in eff.affinity:
            affinity.setdefault(t.topology_key, []).append(
                self.groups[group_key(AFFINITY, t, pod.namespace)]
            )
        for t in eff.anti:
            anti.setdefault(t.topology_key, []).append(
                self.groups[group_key(ANTI, t, pod.namespace)]
            )
        for g in cls.matched:
            if g.kind == ANTI and g.owners:
                inverse.setdefault(g.topology_key, []).append(g)
            if g.kind in (SPREAD, ANTI) and not g.is_hostname:
                balance.setdefault(g.topology_key, []).append(g)
            if g.is_hostname:
                hostname = True
        keys: set[str] = set()
        for d in (spread, affinity, anti, balance):
            for k in d:
                if k == LABEL_HOSTNAME:
                    hostname = True
                else:
                    keys.add(k)
        simple = not keys and not hostname and not inverse
        return _Topo(
            keys=tuple(sorted(keys)),
            spread=spread,
            affinity=affinity,
            anti=anti,
            inverse=inverse,
            balance=balance,
            hostname=hostname,
            simple=simple,
        )

    def _eligible_domains(
        self,
        key: str,
        reqs: Requirements,
        spread: SpreadConstraint,
        tolerations: tuple[Toleration, ...],
    ) -> list[str]:
        honor_taints = spread.node_taints_policy == "Honor"
        cache_key = (
            key,
            reqs if spread.node_affinity_policy == "Honor" else Requirements(),
            honor_taints,
            id(tolerations) if honor_taints else 0,
        )
        got = self._eligible.get(cache_key)
        if got is not None:
            return got
        allowed = reqs.get(key) if spread.node_affinity_policy == "Honor" else None
        out = []
        for d, sources in self._universe.get(key, {}).items():
            if allowed is not None and not allowed.has(d):
                continue
            if honor_taints and not any(self._source_tolerated(s, tolerations) for s in sources):
                continue
            out.append(d)
        out.sort()
        self._eligible[cache_key] = out
        return out

    def _source_tolerated(
        self, source: tuple[str, int], tolerations: tuple[Toleration, ...]
    ) -> bool:
        kind, idx = source
        taints = self.existing[idx].taints if kind == "node" else self.pools[idx].taints
        return untolerated(taints, tolerations) is None

    def _domain_ok(
        self,
        topo: _Topo,
        eff: _Eff,
        key: str,
        domain: str,
        reqs: Requirements,
        candidates: Sequence[str],
    ) -> str | None:
        for s, g, self_match in topo.spread.get(key, ()):
            eligible = self._eligible_domains(key, reqs, s, eff.tolerations)
            low = g.min_count(eligible, s.min_domains)
            if g.count(domain) + (1 if self_match else 0) - low > s.max_skew:
                return f"topology spread on {key} (maxSkew {s.max_skew}) would be violated"
        for g in topo.affinity.get(key, ()):
            if g.count(domain) == 0 and any(g.count(d) > 0 for d in candidates):
                return f"pod affinity on {key} requires a domain with pods matching {g.selector}"
        for g in topo.anti.get(key, ()):
            if g.count(domain) > 0:
                return f"pod anti-affinity on {key} with pods matching {g.selector}"
        for g in topo.inverse.get(key, ()):
            if g.owners.get(domain, 0) > 0:
                return f"anti-affinity of other pods on {key} excludes this pod"
        return None

    def _domain_score(self, topo: _Topo, key: str, domain: str) -> tuple[int, int, int, str]:
        own = sum(g.count(domain) for _, g, _ in topo.spread.get(key, ()))
        populated = -sum(g.count(domain) for g in topo.affinity.get(key, ()))
        bal = sum(g.count(domain) for g in topo.balance.get(key, ()))
        return (own, populated, bal, domain)

    def _record(self, cls: _Class, eff: _Eff, domains: dict[str, str], k: int) -> None:
        for g in cls.matched:
            d = domains.get(g.topology_key)
            if d is not None:
                g.add(d, k)
        for t in eff.required_anti:
            d = domains.get(t.topology_key)
            if d is not None:
                self.groups[group_key(ANTI, t, cls.pod.namespace)].add_owner(d, k)

    # ---- existing nodes ---------------------------------------------------------------------

    def _existing_domains_ok(
        self, cls: _Class, eff: _Eff, topo: _Topo, domains: tuple[str | None, ...]
    ) -> bool:
        """Whether a node in these domains (one per key of `topo.keys`) keeps the class's
        zonal (non-hostname) constraints; the same for every node of those domains."""
        reqs = eff.alternatives[0]
        for key, d in zip(topo.keys, domains, strict=True):
            if d is None:
                if topo.spread.get(key) or topo.affinity.get(key):
                    return False
                continue
            candidates = self._universe_sorted.get(key, ())
            if self._domain_ok(topo, eff, key, d, reqs, candidates) is not None:
                return False
        return True

    def _existing_host_ok(self, e: NodeView, cls: _Class, topo: _Topo) -> bool:
        """Whether the node keeps the class's hostname constraints. Placing pods of the class
        only adds to the counts these read, so once a node fails it fails for the class."""
        if not topo.hostname:
            return True
        key = LABEL_HOSTNAME
        d = e.labels[key]
        for s, g, self_match in topo.spread.get(key, ()):
            if g.count(d) + (1 if self_match else 0) > s.max_skew:
                return False
        for g in topo.affinity.get(key, ()):
            if g.count(d) == 0 and (g.counts or not g.selects(cls.pod, self.ns_labels)):
                return False
        for g in topo.anti.get(key, ()):
            if g.count(d) > 0:
                return False
        return all(g.owners.get(d, 0) <= 0 for g in topo.inverse.get(key, ()))

    def _to_existing(
        self, cls: _Class, eff: _Eff, topo: _Topo, pods: list[PodView]
    ) -> list[PodView]:
        """Fill existing nodes in order; only nodes with room whose shape may admit the class
        are visited (see existing.py)."""
        cluster = self.cluster
        vec = cls.vec
        adm = eff.admission
        nodes = cluster.candidates(vec, adm)
        if not topo.simple:
            return self._to_existing_one_by_one(cls, eff, topo, pods, nodes)
        total = len(pods)
        start = 0
        for i in nodes.tolist():
            if start >= total:
                break
            k = cluster.room(i, vec, total - start)
            e = self.existing[i]
            self._record(cls, eff, e.labels, k)
            cluster.take(i, vec, k)
            self.existing_placed[e.node.name].extend(pods[start : start + k])
            start += k
        return pods[start:] if start else pods

    def _to_existing_one_by_one(
        self,
        cls: _Class,
        eff: _Eff,
        topo: _Topo,
        pods: list[PodView],
        nodes: npt.NDArray[np.intp],
    ) -> list[PodView]:
        """Pods with topology constraints, as Karpenter places them: each goes to the first
        node in order that takes it now. A node's zonal verdict is shared by every node of its
        domains and can change with each pod, so it is asked per domain and pod; room, host
        ports and hostname constraints only get tighter, so each domain's list of nodes is
        walked once, past the nodes that can no longer take a pod of the class."""
        cluster = self.cluster
        vec = cls.vec
        ports = cls.pod.host_ports
        by_domains: dict[tuple[str | None, ...], list[int]] = {}
        ids = cluster.domain_ids(topo.keys)[nodes]
        for u in np.unique(ids).tolist():
            members: list[int] = nodes[ids == u].tolist()
            labels = self.existing[members[0]].labels
            by_domains[tuple(labels.get(k) for k in topo.keys)] = members
        heads = dict.fromkeys(by_domains, 0)
        placed = 0
        for pod in pods:
            best = -1
            for domains, members in by_domains.items():
                h = heads[domains]
                if h >= len(members) or not self._existing_domains_ok(cls, eff, topo, domains):
                    continue
                while h < len(members):
                    e = self.existing[members[h]]
                    if (
                        cluster.room(e.idx, vec, 1) > 0
                        and not (ports & e.ports)
                        and self._existing_host_ok(e, cls, topo)
                    ):
                        break
                    h += 1
                heads[domains] = h
                if h < len(members) and (best < 0 or members[h] < best):
                    best = members[h]
            if best < 0:
                break  # the rest of the class is refused alike
            e = self.existing[best]
            self._record(cls, eff, e.labels, 1)
            cluster.take(best, vec, 1)
            e.ports.update(ports)
            self.existing_placed[e.node.name].append(pod)
            placed += 1
        return pods[placed:] if placed else pods

    # ---- new capacity -----------------------------------------------------------------------

    def _pool_info(
        self, pool: PoolContext, cls: _Class, eff: _Eff
    ) -> tuple[Requirements, int] | str:
        key = (pool.index, cls.id, id(eff))
        got = self._pool_info_cache.get(key)
        if got is not None:
            return got
        got = self._compute_pool_info(pool, cls, eff)
        self._pool_info_cache[key] = got
        return got

    def _compute_pool_info(
        self, pool: PoolContext, cls: _Class, eff: _Eff
    ) -> tuple[Requirements, int] | str:
        bad = pool.tolerated(eff.tolerations)
        if bad:
            return bad
        if cls.pod.host_ports & pool.daemon_ports:
            return "host ports conflict with its daemonsets"
        reason = ""
        for alt in eff.alternatives:
            why = pool.node_reqs.compatible(alt, well_known=pool.well_known)
            if why is not None:
                reason = f"incompatible requirements, {why}"
                continue
            merged = pool.node_reqs.union(alt)
            compat = pool.compatible_mask(merged)
            if not compat:
                reason = "no instance type met the scheduling requirements"
                keys = [k for k in alt if k != LABEL_NODEPOOL]
                if keys:
                    reason += " (" + ", ".join(alt[k].describe() for k in sorted(keys)) + ")"
                continue
            fit = pool.fit_mask(merged, cls.vec)
            if not fit:
                reason = (
                    "no instance type has enough resources for requests "
                    + _fmt(self.dims.map(cls.vec))
                    + " plus daemonset overhead"
                )
                continue
            mask = fit & self._limit_masks[pool.index]
            if not mask:
                reason = self._limit_reason(pool, fit)
                continue
            return alt, mask
        return reason or "incompatible"

    def _limit_reason(self, pool: PoolContext, fit: int) -> str:
        """Which limit keeps every type in `fit` out: the resource whose smallest need among
        them is more than what is left."""
        left = self._remaining_limits[pool.index] or {}
        if left.get(_NODES, 1) < 1:
            return "all instance types that fit exceed its limits " + limits.detail(
                _NODES, need={_NODES: 1}, left=left
            )
        smallest: dict[str, int] = {}
        for i in bits(fit):
            for name in left:
                amount = pool.types[i].capacity.get(name, 0)
                if name not in smallest or amount < smallest[name]:
                    smallest[name] = amount
        short = limits.shortfall(smallest, left)
        if short is None:  # each resource fits in some type, but no type fits in all of them
            short = min(left, key=lambda n: left[n] - smallest.get(n, 0))
        return "all instance types that fit exceed its limits " + limits.detail(
            short, need=smallest, left=left
        )

    def _choose_domains(
        self, pool: PoolContext, cls: _Class, eff: _Eff, topo: _Topo, reqs: Requirements, mask: int
    ) -> tuple[Requirements, int, dict[str, str]] | str:
        domains: dict[str, str] = {}
        for key in topo.keys:
            merged = pool.node_reqs.union(reqs)
            candidates = sorted(pool.domains(mask, merged, key))
            best: tuple[int, int, int, str] | None = None
            reason = f"no {key} domain available"
            for d in candidates:
                why = self._domain_ok(topo, eff, key, d, reqs, candidates)
                if why is not None:
                    reason = why
                    continue
                score = self._domain_score(topo, key, d)
                if best is None or score < best:
                    best = score
            if best is None:
                return reason
            domain = best[3]
            domains[key] = domain
            reqs = reqs.add(Requirement(key, complement=False, values=(domain,)))
            mask &= pool.fit_mask(pool.node_reqs.union(reqs), cls.vec)
            if not mask:
                return f"no instance type fits in {key} {domain}"
        return reqs, mask, domains

    def _to_new(
        self, cls: _Class, eff: _Eff, topo: _Topo, pods: list[PodView], *, first_pool: int = 0
    ) -> tuple[list[PodView], str]:
        reasons: dict[str, str] = {}
        infos: list[tuple[PoolContext, Requirements, int]] = []
        for pool in self.pools[first_pool:]:
            info = self._pool_info(pool, cls, eff)
            if isinstance(info, str):
                reasons[pool.name] = info
            else:
                infos.append((pool, info[0], info[1]))
        if not infos:
            return pods, _join(reasons)
        if not topo.keys:
            pool, reqs, mask = infos[0]
            self._add_unit(cls, eff, pool.index, reqs, mask, pods)
            return [], ""
        failed: list[PodView] = []
        last = ""
        for p in pods:
            placed = False
            for pool, reqs, mask in infos:
                got = self._choose_domains(pool, cls, eff, topo, reqs, mask)
                if isinstance(got, str):
                    reasons[pool.name] = got
                    continue
                preqs, pmask, domains = got
                self._record(cls, eff, domains, 1)
                self._add_unit(cls, eff, pool.index, preqs, pmask, [p])
                placed = True
                break
            if not placed:
                failed.append(p)
                last = _join(reasons)
        return failed, last

    def _add_unit(
        self, cls: _Class, eff: _Eff, pool: int, reqs: Requirements, mask: int, pods: list[PodView]
    ) -> None:
        key = (pool, id(eff), reqs)
        unit = self.units.get(key)
        if unit is None:
            self.units[key] = _Unit(
                cls=cls, eff=eff, pool=pool, reqs=reqs, mask=mask, pods=list(pods)
            )
        else:
            unit.pods.extend(pods)

    # ---- pass 1 -----------------------------------------------------------------------------

    def _schedule_class(self, cls: _Class, pods: list[PodView]) -> tuple[list[PodView], str]:
        prefs = _Prefs(cls.pod, ignore=self.ignore_prefs)
        remaining = pods
        reason = ""
        self._keep_eff: list[_Eff] = getattr(self, "_keep_eff", [])
        while True:
            eff = prefs.effective()
            self._keep_eff.append(eff)  # keeps id(eff) unique for the cache keys
            topo = self._topo(cls, eff)
            if self.existing:
                remaining = self._to_existing(cls, eff, topo, remaining)
            if not remaining:
                return [], ""
            remaining, reason = self._to_new(cls, eff, topo, remaining)
            if not remaining:
                return [], ""
            if not prefs.relax(prefer_no_schedule_pools=self.any_pns):
                return remaining, reason

    # ---- pass 2 -----------------------------------------------------------------------------

    def _items(self, units: list[_Unit]) -> tuple[list[Item], int]:
        items: list[Item] = []
        floors: dict[int, int] = {}
        for u in units:
            pod = u.cls.pod
            ns = pod.namespace
            matched = tuple(g.id for g in u.cls.matched if g.is_hostname)
            anti = tuple(
                self.groups[group_key(ANTI, t, ns)].id for t in u.eff.anti if t.is_hostname
            )
            spread = tuple(
                (self.groups[group_key(SPREAD, s, ns)].id, s.max_skew)
                for s in u.eff.spreads
                if s.is_hostname
            )
            affinity = tuple(
                self.groups[group_key(AFFINITY, t, ns)].id for t in u.eff.affinity if t.is_hostname
            )
            seed = any(t in matched for t in anti)
            for t in anti:
                if t in matched:
                    floors[t] = floors.get(t, 0) + len(u.pods)
            for t, _skew in spread:
                if t in matched:
                    floors[-1 - t] = floors.get(-1 - t, 0) + len(u.pods)
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
        floor = 0
        skews = {s_id: skew for it in items for s_id, skew in it.spread}
        for t, n in floors.items():
            floor = max(floor, n if t >= 0 else math.ceil(n / skews.get(-1 - t, 1)))
        return items, floor

    def _pack_pools(self) -> list[_Packed]:
        by_pool: dict[int, list[_Unit]] = {}
        for u in self.units.values():
            by_pool.setdefault(u.pool, []).append(u)
        out: list[_Packed] = []
        for pool in self.pools:
            units = by_pool.get(pool.index)
            if not units:
                continue
            spilled: list[tuple[_Unit, list[PodView]]] = []
            remaining = self._remaining_limits[pool.index]
            if remaining is None:
                out.extend((pool, *got) for got in self._pack_round(pool, units, spilled))
            else:
                out.extend(self._pack_limited(pool, units, remaining, spilled))
            for unit, pods in self._regroup(spilled):
                self._reassign(unit, pods, pool.index + 1, by_pool)
        return out

    def _pack_round(
        self, pool: PoolContext, units: list[_Unit], spilled: list[tuple[_Unit, list[PodView]]]
    ) -> list[tuple[OpenNode, list[PodView], list[InstanceType], bool]]:
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
            types, relaxed, why = self._finalize_types(pool, node)
            if not types:
                self._spill(pods, unit_of, spilled, why)
                continue
            out.append((node, pods, types, relaxed))
        return out

    def _pack_limited(
        self,
        pool: PoolContext,
        units: list[_Unit],
        remaining: dict[str, int],
        spilled: list[tuple[_Unit, list[PodView]]],
    ) -> list[_Packed]:
        """Pack a pool with limits (see limits.py): nodes are accepted in order while their
        cheapest types fit in what is left; the pods of refused nodes are packed again onto
        types that fit what is left, a few rounds; then the accepted lists are trimmed from the
        top until their largest types fit the remaining limits."""
        resources = sorted(k for k in remaining if k != limits.NODES)
        left = dict(remaining)
        accepted: list[tuple[OpenNode, list[PodView], list[InstanceType], bool, list[int]]] = []
        todo = units
        for _ in range(_LIMIT_ROUNDS):
            refused: list[tuple[_Unit, list[PodView]]] = []
            unit_of = {id(p): u for u in todo for p in u.pods}
            progress = False
            for node, pods, types, relaxed in self._pack_round(pool, todo, spilled):
                keep = limits.floor(
                    types, node.reqs, resources=resources, strict_min_values=self.strict_min_values
                )
                need = limits.peak(types, keep, left)
                short = limits.shortfall(need, left)
                if short is not None:
                    self._spill(
                        pods,
                        unit_of,
                        refused,
                        limits.refusal(pool.name, short, need=need, left=left),
                    )
                    continue
                for name, amount in need.items():
                    left[name] -= amount
                for p in pods:
                    self.errors.pop(p.key, None)
                accepted.append((node, pods, types, relaxed, keep))
                progress = True
            todo = []
            if progress:
                mask = self._mask_within(pool, left)
                for unit, pods in self._regroup(refused):
                    if mask & unit.mask and not any(t.is_hostname for t in unit.eff.affinity):
                        todo.append(
                            _Unit(
                                cls=unit.cls,
                                eff=unit.eff,
                                pool=unit.pool,
                                reqs=unit.reqs,
                                mask=unit.mask & mask,
                                pods=pods,
                            )
                        )
                    else:
                        spilled.append((unit, pods))
            else:
                spilled.extend(refused)
            if not todo:
                break
        else:
            spilled.extend((u, u.pods) for u in todo)  # errors say why: the limits
        trimmed = limits.trim([a[2] for a in accepted], [a[4] for a in accepted], remaining)
        out: list[_Packed] = []
        for (node, pods, types, relaxed, _keep), kept in zip(accepted, trimmed, strict=True):
            if len(kept) < len(types) and not self.strict_min_values:
                relaxed = limits.min_values_shortfall(node.reqs, kept) is not None
            out.append((pool, node, pods, kept, relaxed))
            _consume(remaining, kept)
        return out

    def _best_packing(
        self, pool: PoolContext, units: list[_Unit]
    ) -> tuple[list[Item], list[tuple[OpenNode, list[PodView]]]]:
        """Pack the pool's pods several ways and keep the cheapest plan (see packer.py)."""
        pods = sum(len(u.pods) for u in units)
        # (first fit, aligned, nodes from the LP opened up front)
        variants = [(False, False, "floor"), (False, False, "ceil")]
        if pods <= _LARGE_BATCH:
            variants.insert(1, (True, False, "floor"))
        if pods <= _FIRST_FIT_LIMIT:
            variants += [
                (False, False, "global"),
                (True, False, "global"),
                (False, False, ""),
                (False, True, ""),
            ]
        best: tuple[int, float, list[Item], list[tuple[OpenNode, list[PodView]]]] | None = None
        for first_fit, aligned, preopen in variants:
            items, floor = self._items(units)
            if aligned and floor > _FIRST_FIT_LIMIT // 10:
                continue  # thousands of single-pod nodes: scanning them all per pod is too slow
            if preopen == "ceil" and best is not None and len(best[3]) >= 100:
                continue  # rounding up one node in a hundred cannot pay off

            packer = Packer(
                pool, items, floor=floor, first_fit=first_fit, aligned=aligned, preopen=preopen
            )
            nodes = packer.run()
            failed = sum(len(i.failed) for i in items)
            cost = packer.cost(nodes)
            packer.release()
            if best is None or (failed, cost) < (best[0], best[1] - 1e-9):
                best = (failed, cost, items, nodes)
        assert best is not None
        return best[2], best[3]

    def _repair_spread(self, packed: list[_Packed]) -> list[_Packed]:
        """Undo placements that limits turned into spread violations.

        Zones were chosen for every pod before nodes were packed; when a pool's limits then drop
        some of those nodes, the domains left can be out of balance. Remove pods placed in this
        solve from the fullest domain until every DoNotSchedule spread holds again.
        """
        located: list[tuple[PodView, int, dict[str, str]]] = []
        for i, (_pool, node, pods, _t, _r) in enumerate(packed):
            labels = node.reqs.labels()
            located.extend((p, i, labels) for p in pods)
        for e in self.existing:
            located.extend((p, -2, e.labels) for p in e.node.pods)
            located.extend((p, -1, e.labels) for p in self.existing_placed[e.node.name])
        evicted: set[int] = set()
        for g in self.groups.values():
            if g.kind != SPREAD or g.is_hostname:
                continue
            specs = [
                (p, s)
                for p, i, _lab in located
                if i >= 0
                for s in p.spread
                if s.when_unsatisfiable == DO_NOT_SCHEDULE
                and group_key(SPREAD, s, p.namespace) == g.key
            ]
            if not specs:
                continue
            first, spec = specs[0]
            skew = min(s.max_skew for _p, s in specs)
            counts: dict[str, list[tuple[PodView, int]]] = {}
            for p, i, lab in located:
                d = lab.get(g.topology_key)
                if d is not None and g.selects(p, self.ns_labels):
                    counts.setdefault(d, []).append((p, i))
            eligible = self._eligible_domains(
                g.topology_key, first.strict_requirements(), spec, first.tolerations
            )
            while eligible:
                sizes = {d: len(counts.get(d, [])) for d in eligible}
                low = min(sizes.values()) if len(sizes) >= (spec.min_domains or 0) else 0
                high = max(sizes, key=lambda d: (sizes[d], d))
                if sizes[high] - low <= skew:
                    break
                movable = [(p, i) for p, i in counts[high] if i >= 0 and id(p) not in evicted]
                if not movable:
                    break
                p, i = movable[-1]
                counts[high].remove((p, i))
                evicted.add(id(p))
                self.errors[p.key] = (
                    f"topology spread on {g.topology_key} could not hold once nodepool limits "
                    "were reached"
                )
        if not evicted:
            return packed
        for _pool, node, pods, _types, _relaxed in packed:
            for p in pods:
                if id(p) in evicted:
                    for r, v in enumerate(self.dims.vec(p.requests)):
                        node.used[r] -= v
        return [
            (pool, node, [p for p in pods if id(p) not in evicted], types, relaxed)
            for pool, node, pods, types, relaxed in packed
        ]

    def _spill(
        self,
        pods: list[PodView],
        unit_of: dict[int, _Unit],
        spilled: list[tuple[_Unit, list[PodView]]],
        why: str,
    ) -> None:
        self._limits_spilled = True
        for p in pods:
            self.errors[p.key] = why
            spilled.append((unit_of[id(p)], [p]))

    @staticmethod
    def _regroup(spilled: list[tuple[_Unit, list[PodView]]]) -> list[tuple[_Unit, list[PodView]]]:
        grouped: dict[int, tuple[_Unit, list[PodView]]] = {}
        for u, pods in spilled:
            got = grouped.setdefault(id(u), (u, []))
            got[1].extend(pods)
        return list(grouped.values())

    def _reassign(
        self, unit: _Unit, pods: list[PodView], first_pool: int, by_pool: dict[int, list[_Unit]]
    ) -> None:
        """Pods a pool's limits refused go to the next pool that can take them, pins kept."""
        for pool in self.pools[first_pool:]:
            info = self._pool_info(pool, unit.cls, unit.eff)
            if isinstance(info, str):
                continue
            reqs = unit.reqs
            if pool.node_reqs.compatible(reqs, well_known=pool.well_known) is not None:
                continue
            mask = (
                pool.fit_mask(pool.node_reqs.union(reqs), unit.cls.vec)
                & self._limit_masks[pool.index]
            )
            if not mask:
                continue
            for p in pods:
                self.errors.pop(p.key, None)
            by_pool.setdefault(pool.index, []).append(
                _Unit(cls=unit.cls, eff=unit.eff, pool=pool.index, reqs=reqs, mask=mask, pods=pods)
            )
            return

    def _finalize_types(
        self, pool: PoolContext, node: OpenNode
    ) -> tuple[list[InstanceType], bool, str]:
        """Every type that holds the node's pods, cheapest first, truncated; minValues checked."""
        used = np.array(node.used, dtype=np.int64)
        ok = pool.np_mask(node.mask) & np.all(pool.alloc_np >= used, axis=1)
        prices = pool.prices(node.reqs)
        idx = [int(i) for i in np.nonzero(ok)[0] if math.isfinite(prices[int(i)])]
        idx.sort(key=lambda i: (prices[i], pool.types[i].name))
        idx = idx[: self.inp.max_instance_types]
        types = [pool.types[i] for i in idx]
        if not types:
            return (
                [],
                False,
                f'incompatible with nodepool "{pool.name}": no instance type holds the pods',
            )
        relaxed = False
        short = limits.min_values_shortfall(node.reqs, types)
        if short is not None:
            key, found, wanted = short
            if self.strict_min_values:
                return (
                    [],
                    False,
                    (
                        f'incompatible with nodepool "{pool.name}": '
                        f"minValues requirement not met for {key} ({found} < {wanted})"
                    ),
                )
            relaxed = True
        return types, relaxed, ""

    # ---- results ----------------------------------------------------------------------------

    def _claim(
        self,
        pool: PoolContext,
        node: OpenNode,
        pods: list[PodView],
        types: list[InstanceType],
        relaxed: bool,
    ) -> NewNodeClaim:
        reqs = node.reqs.without(LABEL_HOSTNAME)
        it_req = reqs.get(LABEL_INSTANCE_TYPE)
        min_values = None if relaxed or it_req is None else it_req.min_values
        # Thousands of claims often list the same types: share one requirement (and one list)
        # per distinct list instead of a set of hundreds of names each.
        intern_key = (tuple(t.name for t in types), min_values)
        interned = self._interned.get(intern_key)
        if interned is None:
            interned = (
                Requirement(
                    LABEL_INSTANCE_TYPE,
                    complement=False,
                    values=intern_key[0],
                    min_values=min_values,
                ),
                list(types),
            )
            self._interned[intern_key] = interned
        types = interned[1]
        reqs = reqs.without(LABEL_INSTANCE_TYPE).add(interned[0])
        cts = pool.capacity_types(reqs, types)
        ct_req = reqs.get(LABEL_CAPACITY_TYPE)
        reqs = reqs.without(LABEL_CAPACITY_TYPE).add(
            Requirement(
                LABEL_CAPACITY_TYPE,
                complement=False,
                values=cts,
                min_values=ct_req.min_values if ct_req else None,
            )
        )
        offering = types[0].cheapest_offering(reqs)
        type_index = {t.name: i for i, t in enumerate(pool.types)}
        overhead = list(pool.overhead[type_index[types[0].name]])
        for t in types[1:]:
            o = pool.overhead[type_index[t.name]]
            for r in range(len(overhead)):
                if o[r] < overhead[r]:
                    overhead[r] = o[r]
        requests = self.dims.map([u + o for u, o in zip(node.used, overhead, strict=True)])
        labels = dict(pool.template.labels)
        labels[LABEL_NODEPOOL] = pool.name
        labels.update(reqs.labels())
        return NewNodeClaim(
            nodepool=pool.name,
            requirements=reqs,
            instance_types=types,
            requests=requests,
            pods=pods,
            offering=offering,
            labels=labels,
            taints=pool.template.taints,
            startup_taints=pool.template.startup_taints,
            min_values_relaxed=relaxed,
        )

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
        for pods in self.existing_placed.values():
            for p in pods:
                c = class_of[id(p)]
                counts[c.id] = counts.get(c.id, 0) + 1
        by_id = {c.id: c for c in self.classes}
        return [
            PlacedClass(by_id[cid].pod, by_id[cid].vec, n, cid in on_new)
            for cid, n in counts.items()
        ]

    def solve(self) -> SchedulingResult:
        start = time.perf_counter()
        failed: list[tuple[_Class, list[PodView]]] = []
        for cls in self.classes:
            left, reason = self._schedule_class(cls, cls.pods)
            if left:
                failed.append((cls, left))
                for p in left:
                    self.errors[p.key] = reason
        if failed:
            # Karpenter re-queues failures: a later pod may have made room (e.g. for affinity).
            for cls, pods in failed:
                left, reason = self._schedule_class(cls, pods)
                placed = {id(p) for p in pods} - {id(p) for p in left}
                for p in pods:
                    if id(p) in placed:
                        self.errors.pop(p.key, None)
                    elif reason:
                        self.errors[p.key] = reason
        packed = self._pack_pools()
        if self._limits_spilled:
            packed = self._repair_spread(packed)
        claims = [
            self._claim(pool, node, pods, types, relaxed)
            for pool, node, pods, types, relaxed in packed
            if pods
        ]
        cost = sum(c.price for c in claims)
        bound = lower_bound(
            self._placed_classes(claims),
            pools=self.pools,
            existing_free=[e.initial_free for e in self.existing],
            resources=len(self.dims.names),
        )
        existing = {k: v for k, v in self.existing_placed.items() if v}
        return SchedulingResult(
            node_claims=claims,
            existing=existing,
            errors=dict(self.errors),
            cost=cost,
            lower_bound=bound,
            seconds=time.perf_counter() - start,
        )


def _consume(remaining: dict[str, int], types: list[InstanceType]) -> None:
    """The claim may become its largest listed type."""
    for k in list(remaining):
        if k == _NODES:
            remaining[k] -= 1
        else:
            remaining[k] -= max(t.capacity.get(k, 0) for t in types)


def _fmt(resources: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in format_resources(resources).items()) + "}"


def _join(reasons: dict[str, str]) -> str:
    if not reasons:
        return "no nodepool can launch nodes for it"
    return "; ".join(f'incompatible with nodepool "{name}", {why}' for name, why in reasons.items())
