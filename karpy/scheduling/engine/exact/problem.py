"""The exact planner's view of a small batch: pod classes, purchase options, existing-node room.

A batch qualifies only when every constraint it uses is one the MILP models (resources,
requirements, offerings, taints, DaemonSet overhead, hostname anti-affinity within a class,
existing-node room, NodePool limits and weights). Anything else gives a reason and the
heuristic's plan stands unproven.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.scheduling.engine.existing import Admission, ExistingNodes
from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult
from karpy.scheduling.engine.pool_limits import limits_left
from karpy.scheduling.engine.pools import Dims, PoolContext
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.pods import DO_NOT_SCHEDULE, PodView, SpreadConstraint
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import CPU, MEMORY, PODS
from karpy.scheduling.taints import Toleration

__all__ = ["Option", "PodClass", "Problem", "ZonalSpread", "build", "unsupported"]


@dataclass(frozen=True)
class ZonalSpread:
    """A zonal topology spread over the class's own pods: after the plan, every zone that got
    new pods holds at most `max_skew` more matching pods than the emptiest eligible zone."""

    max_skew: int
    eligible: tuple[str, ...]  # the zones the spread counts (Karpenter's domains for the pod)
    bound: dict[str, int]  # matching pods already bound, per zone
    # fewer eligible zones than minDomains: the minimum counts as 0 (at most maxSkew per zone)
    min_zero: bool = False


@dataclass(eq=False)
class PodClass:
    """Identical pods: same requests, requirements, tolerations and anti-affinity."""

    pods: list[PodView]
    vec: tuple[int, ...]
    alternatives: list[Requirements]
    tolerations: tuple[Toleration, ...]
    one_per_node: bool  # hostname anti-affinity against its own class
    # most pods of the class on one node: 1 with anti-affinity, maxSkew with a hostname spread
    per_node: int = 1 << 30
    clash: frozenset[int] = frozenset()  # other classes it may not share a node with
    zonal: ZonalSpread | None = None


@dataclass(eq=False)
class Option:
    """One way to buy a node: a pool, an instance type and an offering."""

    pool: PoolContext
    type_index: int
    offering: Offering
    requirements: Requirements
    alloc: tuple[int, ...]
    capacity: dict[str, int]
    price: float
    classes: frozenset[int]  # the classes it may host
    alt: dict[int, Requirements] = field(default_factory=dict)  # class -> alternative it meets

    @property
    def instance_type(self) -> InstanceType:
        return self.pool.types[self.type_index]


@dataclass(eq=False)
class Problem:
    dims: Dims
    classes: list[PodClass]
    options: list[Option]
    cluster: ExistingNodes
    # existing node index -> classes it admits
    existing_ok: list[frozenset[int]]
    # pool index -> what is left of its limits (None: unlimited)
    pool_left: dict[int, dict[str, int] | None]
    pools: list[PoolContext]


def unsupported(p: PodView, policy: str) -> str:
    """Why the exact model cannot plan this pod ("" when it can)."""
    if p.unsupported:
        return p.unsupported
    zonal = 0
    for sp in p.spread:
        if sp.topology_key == LABEL_TOPOLOGY_ZONE:
            zonal += 1
            if zonal > 1 or sp.node_taints_policy == "Honor":
                return "topology spread"
        elif not sp.is_hostname:
            return "topology spread"
        if sp.when_unsatisfiable != DO_NOT_SCHEDULE and policy == "Respect":
            return "preferences"
        if sp.min_domains and sp.is_hostname:
            return "topology spread with minDomains"
    if p.affinity:
        return "pod affinity"
    if any(not t.is_hostname for t in p.anti_affinity):
        return "non-hostname pod anti-affinity"
    if policy == "Respect" and (
        p.preferred_affinity or p.preferred_anti_affinity or p.preferred_node_terms
    ):
        return "preferences"
    if len(p.required_terms) > 1 or p.volume_terms:
        return "alternative node affinity terms"
    if p.host_ports:
        return "host ports"
    return ""


def _signature(p: PodView) -> tuple[object, ...]:
    return (
        tuple(sorted(p.requests.items())),
        p.node_selector,
        p.required_terms,
        p.tolerations,
        p.anti_affinity,
        p.spread,
        p.preferred_affinity,
        p.preferred_anti_affinity,
        p.preferred_node_terms,
        tuple(sorted(p.labels.items())),
        p.namespace,
    )


def _zones(inp: SchedulingInput, pools: list[PoolContext]) -> set[str]:
    """Every zone an existing node or a pool's available offering is in."""
    out = {z for n in inp.existing_nodes if (z := n.labels.get(LABEL_TOPOLOGY_ZONE))}
    for pool in pools:
        out |= pool.domains(pool.all_mask, Requirements(), LABEL_TOPOLOGY_ZONE)
    return out


def _classes(
    inp: SchedulingInput, dims: Dims, skip: Mapping[str, str], zones: set[str]
) -> list[PodClass] | str:
    groups: dict[tuple[object, ...], list[PodView]] = {}
    for p in inp.pods:
        if p.key in skip:
            continue
        why = unsupported(p, inp.preference_policy)
        if why:
            return why
        groups.setdefault(_signature(p), []).append(p)
    classes: list[PodClass] = []
    reps = [ps[0] for ps in groups.values()]
    ns = inp.namespace_labels
    for ci, pods in enumerate(groups.values()):
        pod = pods[0]
        alts = pod.requirement_alternatives()
        if any(LABEL_HOSTNAME in a for a in alts):
            return "hostname requirements"
        clash = {
            di
            for di, other in enumerate(reps)
            if any(t.selects(other, ns) for t in pod.anti_affinity)
            or any(t.selects(pod, ns) for t in other.anti_affinity)
        }
        per_node = 1 if ci in clash else len(pods)
        zonal: ZonalSpread | None = None
        for sp in pod.spread:
            if sp.when_unsatisfiable != DO_NOT_SCHEDULE and inp.preference_policy == "Ignore":
                continue
            if not sp.is_hostname:
                got = _zonal(inp, reps, ci, sp, alts, zones)
                if isinstance(got, str):
                    return got
                zonal = got
                continue
            # Every new node is a domain with no matching pod, so the skew caps each node at
            # maxSkew pods, as long as the spread counts only this class's pending pods.
            selects = [
                di
                for di, other in enumerate(reps)
                if other.namespace == pod.namespace and sp.selector.matches(other.labels)
            ]
            if selects != [ci] or any(
                b.namespace == pod.namespace and sp.selector.matches(b.labels)
                for n in inp.existing_nodes
                for b in n.pods
            ):
                return "hostname spread over other pods"
            per_node = min(per_node, sp.max_skew)
        classes.append(
            PodClass(
                pods=pods,
                vec=dims.vec(pod.requests),
                alternatives=alts,
                tolerations=pod.tolerations,
                one_per_node=ci in clash,
                clash=frozenset(clash - {ci}),
                per_node=per_node,
                zonal=zonal,
            )
        )
    return classes


def _zonal(
    inp: SchedulingInput,
    reps: list[PodView],
    ci: int,
    sp: SpreadConstraint,
    alts: list[Requirements],
    zones: set[str],
) -> ZonalSpread | str:
    """A zonal spread the model handles: it counts only this class among the pending pods."""
    pod = reps[ci]
    selects = [
        di
        for di, other in enumerate(reps)
        if other.namespace == pod.namespace and sp.selector.matches(other.labels)
    ]
    if selects != [ci] or len(alts) != 1:
        return "zonal spread over other pods"
    allowed = alts[0].get(LABEL_TOPOLOGY_ZONE) if sp.node_affinity_policy == "Honor" else None
    eligible = tuple(sorted(z for z in zones if allowed is None or allowed.has(z)))
    bound: dict[str, int] = {}
    for n in inp.existing_nodes:
        zone = n.labels.get(LABEL_TOPOLOGY_ZONE)
        for b in n.pods:
            if zone and b.namespace == pod.namespace and sp.selector.matches(b.labels):
                bound[zone] = bound.get(zone, 0) + 1
    return ZonalSpread(
        max_skew=sp.max_skew,
        eligible=eligible,
        bound=bound,
        min_zero=sp.min_domains is not None and len(eligible) < sp.min_domains,
    )


def _fixed(opt_reqs: Requirements, alt: Requirements) -> bool:
    """Every key the pod names has one known value (or is known absent) on such a node, so
    pods that share the node can never need different values of it."""
    for key, want in alt.items():
        have = opt_reqs.get(key)
        if have is None:
            if not want.allows_absent():
                return False
            continue
        if have.complement or len(have.values) != 1:
            return False
    return True


def build(inp: SchedulingInput, heuristic: SchedulingResult) -> Problem | str:
    """The problem, or why the batch is out of the exact planner's reach."""
    names = {CPU, MEMORY, PODS}
    for p in inp.pods:
        names.update(p.requests)
    for d in inp.daemonset_pods:
        names.update(d.requests)
    dims = Dims(sorted(names))
    ordered = sorted(inp.templates, key=lambda t: (t.weight, t.name), reverse=True)
    pools = [
        PoolContext(t, index=i, dims=dims, daemons=inp.daemonset_pods)
        for i, t in enumerate(ordered)
    ]
    # Pods the heuristic could not place stay unschedulable; the rest are planned exactly.
    got = _classes(inp, dims, heuristic.errors, _zones(inp, pools))
    if isinstance(got, str):
        return got
    classes = got
    for pool in pools:
        if pool.has_prefer_no_schedule:
            return "PreferNoSchedule taints"
        if any(r.min_values for r in pool.node_reqs.values()):
            return "minValues"
    ns = inp.namespace_labels
    for n in inp.existing_nodes:
        for b in n.pods:
            for t in b.anti_affinity:
                if not t.is_hostname and any(t.selects(c.pods[0], ns) for c in classes):
                    return "zonal anti-affinity of bound pods"
    options: list[Option] = []
    # per class: the pools Karpenter would consider (the heaviest that can host it)
    allowed = _allowed_pools(inp, heuristic, classes, pools)
    for pool in pools:
        pool_options = _pool_options(pool, classes, allowed)
        if isinstance(pool_options, str):
            return pool_options
        options.extend(pool_options)
    cluster = ExistingNodes(inp.existing_nodes, dims=dims, daemons=inp.daemonset_pods)
    existing_ok: list[frozenset[int]] = []
    for view in cluster.nodes:
        ok = set()
        for ci, c in enumerate(classes):
            if not cluster.admits(view.idx, Admission(tuple(c.alternatives), c.tolerations)):
                continue
            rep = c.pods[0]
            ns = inp.namespace_labels
            if any(
                any(t.selects(b, ns) for t in rep.anti_affinity)
                or any(t.is_hostname and t.selects(rep, ns) for t in b.anti_affinity)
                for b in view.node.pods
            ):
                continue
            ok.add(ci)
        existing_ok.append(frozenset(ok))
    return Problem(
        dims=dims,
        classes=classes,
        options=options,
        cluster=cluster,
        existing_ok=existing_ok,
        pool_left=dict(zip((pool.index for pool in pools), limits_left(pools, inp), strict=True)),
        pools=pools,
    )


_OFFERING_KEYS = (LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE)


def _pool_options(
    pool: PoolContext, classes: list[PodClass], allowed: list[set[int]]
) -> list[Option] | str:
    """The pool's options: per instance type, the cheapest offering for each set of classes
    its offerings admit (offerings differ only in zone and capacity type), per zone when one
    of the classes has a zonal spread."""
    out: list[Option] = []
    cands = [
        ci
        for ci, c in enumerate(classes)
        if pool.index in allowed[ci] and pool.tolerated(c.tolerations) is None
    ]
    alts = {
        ci: [
            a
            for a in classes[ci].alternatives
            if pool.node_reqs.compatible(a, well_known=pool.well_known) is None
        ]
        for ci in cands
    }
    for ti, it in enumerate(pool.types):
        base = pool.node_reqs.union(it.requirements)
        # per class: the alternatives this type's labels meet, zone and capacity type aside
        type_alts: dict[int, list[Requirements]] = {}
        for ci in cands:
            ok = []
            for a in alts[ci]:
                rest = a.without(*_OFFERING_KEYS)
                if base.intersects(rest) is not None:
                    continue
                if not _fixed(base, rest):
                    return "requirements on labels a node does not fix"
                ok.append(a)
            if ok:
                type_alts[ci] = ok
        if not type_alts:
            continue
        best: dict[tuple[frozenset[int], str], tuple[Offering, dict[int, Requirements]]] = {}
        for o in it.offerings:
            if not o.available or not o.compatible(pool.node_reqs):
                continue
            alt_for: dict[int, Requirements] = {}
            for ci, ok in type_alts.items():
                for a in ok:
                    if o.compatible(a):
                        alt_for[ci] = a
                        break
            if not alt_for:
                continue
            # a class with a zonal spread needs an option in every zone
            zonal = any(classes[ci].zonal is not None for ci in alt_for)
            key = (frozenset(alt_for), o.zone if zonal else "")
            held = best.get(key)
            if held is None or (o.price, o.zone, o.capacity_type) < (
                held[0].price,
                held[0].zone,
                held[0].capacity_type,
            ):
                best[key] = (o, alt_for)
        for (hosted, _), (o, alt_for) in best.items():
            out.append(
                Option(
                    pool=pool,
                    type_index=ti,
                    offering=o,
                    requirements=base,
                    alloc=pool.alloc[ti],
                    capacity=dict(it.capacity),
                    price=o.price,
                    classes=hosted,
                    alt=alt_for,
                )
            )
    return out


def _allowed_pools(
    inp: SchedulingInput,
    heuristic: SchedulingResult,
    classes: list[PodClass],
    pools: list[PoolContext],
) -> list[set[int]]:
    """Karpenter tries NodePools by weight: a class may use the heaviest pools that can host
    it, or, where the heuristic had to go lighter (limits), any pool at least that heavy."""
    by_name = {p.name: p for p in pools}
    used_weight: dict[int, int] = {}
    pod_pool = {id(p): c.nodepool for c in heuristic.node_claims for p in c.pods}
    out: list[set[int]] = []
    for ci, c in enumerate(classes):
        hosting = [
            pool
            for pool in pools
            if pool.tolerated(c.tolerations) is None
            and any(
                pool.node_reqs.compatible(a, well_known=pool.well_known) is None
                and pool.fit_mask(pool.node_reqs.union(a), c.vec)
                for a in c.alternatives
            )
        ]
        if not hosting:
            out.append(set())
            continue
        floor = max(p.template.weight for p in hosting)
        for p in c.pods:
            name = pod_pool.get(id(p))
            if name is not None and name in by_name:
                w = by_name[name].template.weight
                floor = min(floor, w)
        used_weight[ci] = floor
        out.append({p.index for p in hosting if p.template.weight >= floor})
    return out
