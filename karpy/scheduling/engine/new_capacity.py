"""Binding pods to new capacity: which NodePool takes each pod, and in which domains.

Pods no existing node takes go to the first NodePool, in weight order, whose taints,
requirements, instance types, DaemonSet overhead and limits allow them, as Karpenter decides.
Pods with zonal constraints are pinned to a domain each (the valid one with the fewest matching
pods). Which nodes to launch is not decided here: the pods are collected into `Unit`s per pool
and packed for the whole batch later (assignment.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from karpy.apis.v1.labels import LABEL_NODEPOOL
from karpy.scheduling.engine.domains import ClassTopology, DomainScore, Topology
from karpy.scheduling.engine.podclasses import PodClass
from karpy.scheduling.engine.pool_limits import PoolLimits
from karpy.scheduling.engine.pools import Dims, PoolContext
from karpy.scheduling.engine.preferences import Constraints
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import format_resources

__all__ = ["Leftover", "NewCapacity", "PoolFit", "Unit"]


@dataclass(eq=False)
class Unit:
    """Pods of one class bound for one pool with one set of (pinned) requirements."""

    cls: PodClass
    eff: Constraints
    pool: int
    reqs: Requirements
    mask: int
    pods: list[PodView]


class PoolFit(NamedTuple):
    """How a pool can take a class: the requirement alternative it meets, and the instance
    types (a bitmask) that hold one pod within the pool's limits."""

    reqs: Requirements
    mask: int


class Leftover(NamedTuple):
    """Pods not placed, and why (empty when every pod was placed); `by_pool`: each NodePool's
    own reason (what `karpy explain pod` names per NodePool)."""

    pods: list[PodView]
    reason: str
    by_pool: Mapping[str, str] = MappingProxyType({})


class _Candidate(NamedTuple):
    pool: PoolContext
    fit: PoolFit


class _Pinned(NamedTuple):
    """A pod's requirements with its domains pinned, the types left, and the domains."""

    reqs: Requirements
    mask: int
    domains: dict[str, str]


class NewCapacity:
    """The pods bound for new capacity in one solve, as units per pool."""

    def __init__(
        self,
        pools: Sequence[PoolContext],
        dims: Dims,
        pool_limits: PoolLimits,
        topology: Topology,
    ) -> None:
        self.pools = pools
        self.dims = dims
        self.limits = pool_limits
        self.topology = topology
        # (pool index, constraints, pinned requirements) -> unit; constraints hash by identity
        self.units: dict[tuple[int, Constraints, Requirements], Unit] = {}
        self._fits: dict[tuple[int, int, Constraints], PoolFit | str] = {}

    def place(
        self,
        cls: PodClass,
        eff: Constraints,
        topo: ClassTopology,
        pods: list[PodView],
        *,
        first_pool: int = 0,
    ) -> Leftover:
        """Bind the pods to the first pool (from `first_pool` on) that can take them, pinning
        each pod's zonal domains when the class has zonal constraints; the pods no pool takes
        are returned with every pool's reason."""
        reasons: dict[str, str] = {}
        candidates: list[_Candidate] = []
        for pool in self.pools[first_pool:]:
            fit = self.pool_fit(pool, cls, eff)
            if isinstance(fit, str):
                reasons[pool.name] = fit
            else:
                candidates.append(_Candidate(pool, fit))
        if not candidates:
            return Leftover(pods, _join(reasons), dict(reasons))
        if not topo.keys:
            first = candidates[0]
            self.add_unit(cls, eff, first.pool.index, first.fit.reqs, first.fit.mask, pods)
            return Leftover([], "")
        failed: list[PodView] = []
        last = ""
        for p in pods:
            placed = False
            for pool, fit in candidates:
                got = self._choose_domains(pool, cls, eff, topo, fit.reqs, fit.mask)
                if isinstance(got, str):
                    reasons[pool.name] = got
                    continue
                self.topology.record(cls, eff, got.domains, 1)
                self.add_unit(cls, eff, pool.index, got.reqs, got.mask, [p])
                placed = True
                break
            if not placed:
                failed.append(p)
                last = _join(reasons)
        return Leftover(failed, last, dict(reasons) if failed else {})

    def add_unit(
        self,
        cls: PodClass,
        eff: Constraints,
        pool: int,
        reqs: Requirements,
        mask: int,
        pods: list[PodView],
    ) -> None:
        """Bind pods to a pool: pods of one step with the same pinned requirements share a
        unit."""
        key = (pool, eff, reqs)
        unit = self.units.get(key)
        if unit is None:
            self.units[key] = Unit(
                cls=cls, eff=eff, pool=pool, reqs=reqs, mask=mask, pods=list(pods)
            )
        else:
            unit.pods.extend(pods)

    def pool_fit(self, pool: PoolContext, cls: PodClass, eff: Constraints) -> PoolFit | str:
        """How the pool can take a pod of the class, or why it cannot (cached per step)."""
        key = (pool.index, cls.id, eff)
        got = self._fits.get(key)
        if got is not None:
            return got
        got = self._compute_fit(pool, cls, eff)
        self._fits[key] = got
        return got

    def _compute_fit(self, pool: PoolContext, cls: PodClass, eff: Constraints) -> PoolFit | str:
        """The first requirement alternative the pool meets with types that hold a pod within
        its limits; otherwise the reason of the last alternative tried, as Karpenter reports."""
        bad = pool.tolerated(eff.tolerations)
        if bad:
            return bad
        free_ports = pool.port_mask(cls.pod.host_ports)
        if not free_ports:
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
            fit &= free_ports
            if not fit:
                reason = "host ports conflict with the daemonsets of every instance type that fits"
                continue
            mask = fit & self.limits.masks[pool.index]
            if not mask:
                reason = self.limits.reason(pool, fit)
                continue
            return PoolFit(alt, mask)
        return reason or "incompatible"

    def _choose_domains(
        self,
        pool: PoolContext,
        cls: PodClass,
        eff: Constraints,
        topo: ClassTopology,
        reqs: Requirements,
        mask: int,
    ) -> _Pinned | str:
        """Pin one pod's domain for each zonal key, as Karpenter chooses: the valid domain
        with the lowest score; narrow the types to those offered there."""
        domains: dict[str, str] = {}
        for key in topo.keys:
            merged = pool.node_reqs.union(reqs)
            candidates = sorted(pool.domains(mask, merged, key))
            if not candidates and not _own(topo, key):
                continue  # pinned only for other pods' terms, which cannot count it anyway
            best: DomainScore | None = None
            reason = f"no {key} domain available"
            for d in candidates:
                why = self.topology.domain_ok(topo, eff, key, d, reqs, candidates)
                if why is not None:
                    reason = why
                    continue
                score = self.topology.domain_score(topo, key, d)
                if best is None or score < best:
                    best = score
            if best is None:
                return reason
            domain = best.domain
            domains[key] = domain
            reqs = reqs.add(Requirement(key, complement=False, values=(domain,)))
            mask &= pool.fit_mask(pool.node_reqs.union(reqs), cls.vec)
            if not mask:
                return f"no instance type fits in {key} {domain}"
        return _Pinned(reqs, mask, domains)


def _own(topo: ClassTopology, key: str) -> bool:
    """Whether the class has a spread or (anti-)affinity of its own on `key`."""
    return key in topo.spread or key in topo.affinity or key in topo.anti


def _fmt(resources: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in format_resources(resources).items()) + "}"


def _join(reasons: dict[str, str]) -> str:
    if not reasons:
        return "no nodepool can launch nodes for it"
    return "; ".join(f'incompatible with nodepool "{name}", {why}' for name, why in reasons.items())
