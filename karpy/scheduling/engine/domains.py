"""Topology domains of one solve: which exist, how many selected pods each holds, which a pod may
go to.

Built once per solve from the pending classes and the existing nodes: one `Group` per distinct
spread or (anti-)affinity term (see topology.py), the pods already bound counted in, and the
domains of every topology key (from existing nodes' labels and the pools' instance types).
Zonal domains are chosen per pod as Karpenter does (the valid domain with the fewest matching
pods) and recorded as the pods are placed, so later pods see exact counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from karpy.apis.v1.labels import LABEL_HOSTNAME
from karpy.scheduling.engine.existing import NodeView
from karpy.scheduling.engine.podclasses import PodClass
from karpy.scheduling.engine.pools import PoolContext
from karpy.scheduling.engine.preferences import Constraints
from karpy.scheduling.engine.topology import AFFINITY, ANTI, SPREAD, Group, GroupKey, group_key
from karpy.scheduling.pods import AffinityTerm, PodView, SpreadConstraint
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.taints import Toleration, untolerated

__all__ = [
    "AFFINITY_UNMET",
    "ANTI_AFFINITY",
    "INVERSE_ANTI_AFFINITY",
    "SPREAD_VIOLATED",
    "ClassTopology",
    "DomainScore",
    "SpreadTerm",
    "Topology",
]

# How `Topology.domain_ok` starts each reason, followed by the topology key: `misfit` reads the
# word of a NodePool's reason from them.
SPREAD_VIOLATED: Final = "topology spread on"
AFFINITY_UNMET: Final = "pod affinity on"
ANTI_AFFINITY: Final = "pod anti-affinity on"
INVERSE_ANTI_AFFINITY: Final = "anti-affinity of other pods on"


class SpreadTerm(NamedTuple):
    """A spread constraint of a class, its group, and whether it selects the class itself."""

    constraint: SpreadConstraint
    group: Group
    self_match: bool


class DomainScore(NamedTuple):
    """How a domain ranks for a pod, lowest first: fewest pods of its own spreads, then most
    pods its affinity wants, then fewest pods whose spread or anti-affinity selects it."""

    own: int
    populated: int
    balance: int
    domain: str


class _Source(NamedTuple):
    """Where a domain comes from: an existing node or a pool, by index."""

    kind: str  # "node" | "pool"
    idx: int


@dataclass(eq=False)
class ClassTopology:
    """The groups one class's placement must respect, by topology key."""

    keys: tuple[str, ...]  # non-hostname keys to pin
    spread: dict[str, list[SpreadTerm]]
    affinity: dict[str, list[Group]]
    anti: dict[str, list[Group]]
    inverse: dict[str, list[Group]]
    balance: dict[str, list[Group]]
    hostname: bool  # any hostname-scoped constraint
    simple: bool
    # ids of the affinity groups that select the class itself: only these may open a domain
    self_affinity: frozenset[int] = frozenset()


class _Alike(NamedTuple):
    """Bound pods with one namespace and label set: one of them, and how many per node."""

    pod: PodView
    per_node: dict[int, int]


class _EligibleKey(NamedTuple):
    key: str
    reqs: Requirements
    honor_taints: bool
    tolerations: int  # id of the tolerations when taints are honoured, else 0


class Topology:
    """The topology groups and domains of one solve."""

    def __init__(
        self,
        classes: Sequence[PodClass],
        existing: Sequence[NodeView],
        pools: Sequence[PoolContext],
        namespace_labels: Mapping[str, Mapping[str, str]],
    ) -> None:
        self.existing = existing
        self.pools = pools
        self.ns_labels = namespace_labels
        self.groups: dict[GroupKey, Group] = {}
        self._eligible: dict[_EligibleKey, list[str]] = {}
        self._build_groups(classes)
        self._universe = self._domain_universe()
        self._universe_sorted = {k: sorted(v) for k, v in self._universe.items()}

    # ---- preparation ------------------------------------------------------------------------

    def _group_for(self, kind: str, term: AffinityTerm | SpreadConstraint, ns: str) -> Group:
        key = group_key(kind, term, ns)
        g = self.groups.get(key)
        if g is None:
            g = Group(key, len(self.groups))
            self.groups[key] = g
        return g

    def _build_groups(self, classes: Sequence[PodClass]) -> None:
        """One group per term of the pending classes and per required anti-affinity term of
        the bound pods (whose domains become owners); bound pods counted in; each class learns
        the groups selecting it."""
        for c in classes:
            p = c.pod
            for s in p.spread:
                self._group_for(SPREAD, s, p.namespace)
            for t in p.affinity + p.preferred_affinity:
                self._group_for(AFFINITY, t, p.namespace)
            for t in p.anti_affinity + p.preferred_anti_affinity:
                self._group_for(ANTI, t, p.namespace)
        for e in self.existing:
            for p in e.node.pods:
                for t in p.anti_affinity:
                    g = self._group_for(ANTI, t, p.namespace)
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
        alike: dict[tuple[str, frozenset[tuple[str, str]]], _Alike] = {}
        for e in self.existing:
            for p in e.node.pods:
                key = (p.namespace, frozenset(p.labels.items()))
                got = alike.get(key)
                if got is None:
                    got = alike[key] = _Alike(p, {})
                got.per_node[e.idx] = got.per_node.get(e.idx, 0) + 1
        for g in groups:
            tk = g.topology_key
            for p, per_node in alike.values():
                if not g.selects(p, self.ns_labels):
                    continue
                for idx, n in per_node.items():
                    d = self.existing[idx].labels.get(tk)
                    if d is not None:
                        g.add(d, n)

    def _domain_universe(self) -> dict[str, dict[str, list[_Source]]]:
        keys = {g.topology_key for g in self.groups.values() if not g.is_hostname}
        universe: dict[str, dict[str, list[_Source]]] = {k: {} for k in keys}
        for key in keys:
            for e in self.existing:
                d = e.labels.get(key)
                if d is not None:
                    universe[key].setdefault(d, []).append(_Source("node", e.idx))
            for pool in self.pools:
                for d in pool.domains(pool.all_mask, Requirements(), key):
                    universe[key].setdefault(d, []).append(_Source("pool", pool.index))
        return universe

    # ---- per class --------------------------------------------------------------------------

    def group(self, kind: str, term: AffinityTerm | SpreadConstraint, namespace: str) -> Group:
        """The group of a term of a pending class (every such group exists)."""
        return self.groups[group_key(kind, term, namespace)]

    def known_domains(self, key: str) -> Sequence[str]:
        """Every domain of `key` some existing node or pool offers, sorted."""
        return self._universe_sorted.get(key, ())

    def for_class(self, cls: PodClass, eff: Constraints) -> ClassTopology:
        """The groups `cls` must respect at this relaxation step, by key; `simple` when no
        domain needs pinning and nothing is hostname-scoped, so pods may be placed in bulk."""
        pod = cls.pod
        spread: dict[str, list[SpreadTerm]] = {}
        affinity: dict[str, list[Group]] = {}
        anti: dict[str, list[Group]] = {}
        inverse: dict[str, list[Group]] = {}
        balance: dict[str, list[Group]] = {}
        hostname = bool(pod.host_ports)
        pinned: set[str] = set()
        self_affinity: set[int] = set()
        for s in eff.spreads:
            g = self.group(SPREAD, s, pod.namespace)
            spread.setdefault(s.topology_key, []).append(
                SpreadTerm(s, g, s.selector.matches(pod.labels))
            )
        for t in eff.affinity:
            affinity.setdefault(t.topology_key, []).append(self.group(AFFINITY, t, pod.namespace))
        for t in eff.anti:
            anti.setdefault(t.topology_key, []).append(self.group(ANTI, t, pod.namespace))
        for g in cls.matched:
            if g.kind == ANTI and g.owners:
                inverse.setdefault(g.topology_key, []).append(g)
            if g.kind in (SPREAD, ANTI) and not g.is_hostname:
                balance.setdefault(g.topology_key, []).append(g)
            if g.kind == AFFINITY:
                self_affinity.add(g.id)
                if not g.is_hostname:
                    # other pods' affinity needs to know this pod's domain to follow it
                    pinned.add(g.topology_key)
            if g.is_hostname:
                hostname = True
        keys = pinned
        for d in (spread, affinity, anti, balance):
            for k in d:
                if k == LABEL_HOSTNAME:
                    hostname = True
                else:
                    keys.add(k)
        simple = not keys and not hostname and not inverse
        return ClassTopology(
            keys=tuple(sorted(keys)),
            spread=spread,
            affinity=affinity,
            anti=anti,
            inverse=inverse,
            balance=balance,
            hostname=hostname,
            simple=simple,
            self_affinity=frozenset(self_affinity),
        )

    def eligible_domains(
        self,
        key: str,
        reqs: Requirements,
        spread: SpreadConstraint,
        tolerations: tuple[Toleration, ...],
    ) -> list[str]:
        """The domains a spread counts for a pod: those its node affinity and (when the
        policy honours them) its tolerations allow, as Karpenter's nodeAffinityPolicy and
        nodeTaintsPolicy say. Cached per question."""
        honor_taints = spread.node_taints_policy == "Honor"
        cache_key = _EligibleKey(
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
            if honor_taints and not any(self._tolerated(s, tolerations) for s in sources):
                continue
            out.append(d)
        out.sort()
        self._eligible[cache_key] = out
        return out

    def _tolerated(self, source: _Source, tolerations: tuple[Toleration, ...]) -> bool:
        if source.kind == "node":
            taints = self.existing[source.idx].taints
        else:
            taints = self.pools[source.idx].taints
        return untolerated(taints, tolerations) is None

    def domain_ok(
        self,
        topo: ClassTopology,
        eff: Constraints,
        key: str,
        domain: str,
        reqs: Requirements,
        candidates: Sequence[str],
    ) -> str | None:
        """Why one more pod of the class may not go to `domain` of `key` (None if it may)."""
        for s, g, self_match in topo.spread.get(key, ()):
            eligible = self.eligible_domains(key, reqs, s, eff.tolerations)
            low = g.min_count(eligible, s.min_domains)
            if g.count(domain) + (1 if self_match else 0) - low > s.max_skew:
                return f"{SPREAD_VIOLATED} {key} (maxSkew {s.max_skew}) would be violated"
        for g in topo.affinity.get(key, ()):
            # as Karpenter: only a pod its own term selects may open a domain, and only when
            # no candidate domain holds a selected pod yet; any other pod waits for its targets
            if g.count(domain) == 0 and (
                g.id not in topo.self_affinity or any(g.count(d) > 0 for d in candidates)
            ):
                return f"{AFFINITY_UNMET} {key} requires a domain with pods matching {g.selector}"
        for g in topo.anti.get(key, ()):
            if g.count(domain) > 0:
                return f"{ANTI_AFFINITY} {key} with pods matching {g.selector}"
        for g in topo.inverse.get(key, ()):
            if g.owners.get(domain, 0) > 0:
                return f"{INVERSE_ANTI_AFFINITY} {key} excludes this pod"
        return None

    def domain_score(self, topo: ClassTopology, key: str, domain: str) -> DomainScore:
        """How `domain` ranks for the next pod of the class (lowest wins)."""
        own = sum(t.group.count(domain) for t in topo.spread.get(key, ()))
        populated = -sum(g.count(domain) for g in topo.affinity.get(key, ()))
        bal = sum(g.count(domain) for g in topo.balance.get(key, ()))
        return DomainScore(own, populated, bal, domain)

    def record(self, cls: PodClass, eff: Constraints, domains: Mapping[str, str], k: int) -> None:
        """Count `k` pods of the class placed in `domains` (topology key -> domain)."""
        for g in cls.matched:
            d = domains.get(g.topology_key)
            if d is not None:
                g.add(d, k)
        for t in eff.required_anti:
            d = domains.get(t.topology_key)
            if d is not None:
                self.group(ANTI, t, cls.pod.namespace).add_owner(d, k)
