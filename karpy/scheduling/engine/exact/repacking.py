"""Exact re-packing of a plan's most wasteful new nodes, for batches the exact planner cannot
take whole (too many pods, or some pods it does not model).

The heuristic's plan is close to the fluid optimum in bulk; what it leaves on the table sits in
its last, part-filled nodes. Those are found by waste (price times the share of the node's
cheapest type its pods leave empty), grouped per NodePool into small groups (at most
`GROUP_NODES` nodes and `GROUP_PODS` pods, most wasteful first), and each group's pods are
planned again by the exact planner as a batch of their own; a group's nodes are replaced only
when the exact plan is cheaper (or as cheap with fewer nodes), so the plan never gets dearer.

Only pods whose placement concerns nothing but their own node move: no zonal (or other
non-hostname) spread, affinity or anti-affinity of their own, none of another pod's such terms
selecting them, nothing the exact model leaves out. Hostname anti-affinity and spreads stay
true because the new nodes hold only the group's pods. NodePools with limits are skipped (the
rest of the plan counts against them). Work is bounded deterministically (`GROUPS` groups, the
exact planner's own work limits) with a CPU-time backstop; batches over `MAX_PODS` pods are
left alone, so the largest batches pay nothing.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence

from karpy.scheduling.engine.exact import milp
from karpy.scheduling.engine.exact.improve import improve
from karpy.scheduling.engine.exact.milp import Budget, Limits
from karpy.scheduling.engine.exact.problem import unsupported
from karpy.scheduling.engine.model import (
    NewNodeClaim,
    NodePoolTemplate,
    SchedulingInput,
    SchedulingResult,
)
from karpy.scheduling.pods import DO_NOT_SCHEDULE, AffinityTerm, PodView, SpreadConstraint
from karpy.scheduling.resources import CPU, MEMORY

__all__ = [
    "GROUPS",
    "GROUP_LIMITS",
    "GROUP_NODES",
    "GROUP_PODS",
    "GROUP_SECONDS",
    "MAX_PODS",
    "repack",
]

# Batches above this many pending pods keep the heuristic's plan as it is.
MAX_PODS = 1_000
# A group: at most this many nodes and pods (larger groups save a little more, but their
# searches run into the time backstop far more often).
GROUP_NODES = 8
GROUP_PODS = 24
# Groups tried per batch, and each group's search limits: the pass's deterministic work limits
# (a group's search is the whole batch's cut tenfold).
GROUPS = 4
GROUP_LIMITS = Limits(steps=20_000, nodes=200)
# CPU seconds a group may take at most (a backstop: the work limits end most groups first).
GROUP_SECONDS = 0.05


def _pending_terms(
    pods: Iterable[PodView], *, respect: bool
) -> list[tuple[str, AffinityTerm | SpreadConstraint]]:
    """Terms that tie a pod's place to pods outside its node: every affinity, and
    anti-affinities and spreads over another topology than the hostname (with the owner's
    namespace, for spreads)."""
    seen: set[tuple[str, AffinityTerm | SpreadConstraint]] = set()
    out: list[tuple[str, AffinityTerm | SpreadConstraint]] = []
    for p in pods:
        terms: list[AffinityTerm | SpreadConstraint] = list(p.affinity)
        terms += [t for t in p.anti_affinity if not t.is_hostname]
        terms += [
            s
            for s in p.spread
            if not s.is_hostname and (respect or s.when_unsatisfiable == DO_NOT_SCHEDULE)
        ]
        if respect:
            terms += list(p.preferred_affinity)
            terms += [t for t in p.preferred_anti_affinity if not t.is_hostname]
        for t in terms:
            key = (p.namespace, t)
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


def _selected(
    p: PodView,
    terms: Sequence[tuple[str, AffinityTerm | SpreadConstraint]],
    inp: SchedulingInput,
) -> bool:
    for owner_ns, t in terms:
        if isinstance(t, AffinityTerm):
            if t.selects(p, inp.namespace_labels):
                return True
        elif owner_ns == p.namespace and t.selector.matches(p.labels):
            return True
    return False


def _movable(inp: SchedulingInput) -> set[int]:
    """ids of the pending pods that may move between new nodes of their pool."""
    respect = inp.preference_policy == "Respect"
    bound = [b for n in inp.existing_nodes for b in n.pods]
    terms = _pending_terms([*inp.pods, *bound], respect=respect)
    verdict: dict[tuple[object, ...], bool] = {}
    out: set[int] = set()
    for p in inp.pods:
        ok = verdict.get(p.signature)
        if ok is None:
            ok = (
                not unsupported(p, inp.preference_policy)
                and all(s.is_hostname for s in p.spread)
                and not _selected(p, terms, inp)
                # a hostname spread counting bound pods: existing nodes may set its minimum
                and not any(
                    b.namespace == p.namespace and s.selector.matches(b.labels)
                    for s in p.spread
                    for b in bound
                )
            )
            verdict[p.signature] = ok
        if ok:
            out.add(id(p))
    return out


def _waste(claim: NewNodeClaim) -> float:
    """The price of the room the node's pods leave empty on its cheapest type."""
    if not claim.instance_types:
        return 0.0
    alloc = claim.instance_types[0].allocatable
    fill = max(
        (claim.requests.get(k, 0) / alloc[k] for k in (CPU, MEMORY) if alloc.get(k, 0) > 0),
        default=1.0,
    )
    return claim.price * max(0.0, 1.0 - fill)


def _groups(
    claims: Sequence[NewNodeClaim], movable: set[int], pools: dict[str, NodePoolTemplate]
) -> list[list[int]]:
    """Groups of claim indices, per NodePool, most wasteful first."""
    ranked: dict[str, list[tuple[float, int]]] = {}
    for i, c in enumerate(claims):
        pool = pools.get(c.nodepool)
        if pool is None or pool.limits is not None or c.min_values_relaxed:
            continue
        if not c.pods or any(id(p) not in movable for p in c.pods):
            continue
        waste = _waste(c)
        if waste > 1e-9:
            ranked.setdefault(c.nodepool, []).append((-waste, i))
    groups: list[tuple[float, list[int]]] = []
    for name in sorted(ranked):
        group: list[int] = []
        pods = waste = 0.0
        for neg, i in sorted(ranked[name]):
            n = len(claims[i].pods)
            if n > GROUP_PODS:
                continue
            if group and (len(group) == GROUP_NODES or pods + n > GROUP_PODS):
                groups.append((waste, group))
                group, pods, waste = [], 0.0, 0.0
            group.append(i)
            pods += n
            waste -= neg
        if group:
            groups.append((waste, group))
    groups.sort(key=lambda g: (-g[0], g[1]))
    return [g for _, g in groups[:GROUPS]]


def repack(
    inp: SchedulingInput,
    result: SchedulingResult,
    *,
    started: Budget | None = None,
) -> SchedulingResult:
    """`result` with its most wasteful new nodes re-packed exactly where that is cheaper.
    Each group may take `GROUP_SECONDS` of CPU, whatever the planning budget has left (so
    whether a group runs never depends on time); `started`, the planning budget running since
    the heuristic began, tells how fast CPU time has been coming (HiGHS's limit is wall time)."""
    began = time.perf_counter()
    base = started if started is not None else Budget.start(0.0)
    if len(inp.pods) > MAX_PODS or not result.node_claims:
        return result
    pools = {t.name: t for t in inp.templates}
    groups = _groups(result.node_claims, _movable(inp), pools)
    claims: list[NewNodeClaim | None] = list(result.node_claims)
    added: list[NewNodeClaim] = []
    saved, replaced, tried = 0.0, 0, 0
    stopped = ""
    for group in groups:
        clock = dataclasses.replace(base, deadline=milp.clock() + GROUP_SECONDS)
        tried += 1
        old = [result.node_claims[i] for i in group]
        pool = pools[old[0].nodepool]
        sub = dataclasses.replace(
            inp,
            pods=[p for c in old for p in c.pods],
            templates=[pool],
            existing_nodes=(),
            pool_usage=None,
        )
        cost = sum(c.price for c in old)
        heuristic = SchedulingResult(
            node_claims=old, existing={}, errors={}, cost=cost, lower_bound=0.0
        )
        got = improve(sub, heuristic, started=clock, limits=GROUP_LIMITS)
        if "time limit" in got.exact:
            stopped = "; time limit in a group"
        if got.node_claims is old or got.errors:
            continue
        for i in group:
            claims[i] = None
        added.extend(got.node_claims)
        saved += cost - got.cost
        replaced += len(old)
    if not tried:
        return result
    seconds = result.seconds + (time.perf_counter() - began)
    note = (
        f"repacked {tried} group(s) of the most wasteful nodes: {replaced} node(s) replaced,"
        f" {saved:.6f}/h saved{stopped}"
    )
    exact = f"{result.exact}; {note}" if result.exact else note
    if not replaced:
        return dataclasses.replace(result, exact=exact, seconds=seconds)
    kept = [c for c in claims if c is not None] + added
    return dataclasses.replace(
        result, node_claims=kept, cost=sum(c.price for c in kept), exact=exact, seconds=seconds
    )
