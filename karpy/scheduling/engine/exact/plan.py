"""Turn a MILP solution into a `SchedulingResult` the provisioner can launch."""

from __future__ import annotations

import numpy as np

from karpy.apis.v1.labels import LABEL_TOPOLOGY_ZONE
from karpy.scheduling.engine.claims import new_claim
from karpy.scheduling.engine.exact.milp import Solution
from karpy.scheduling.engine.exact.problem import Option, Problem
from karpy.scheduling.engine.model import NewNodeClaim, SchedulingInput, SchedulingResult
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirement

__all__ = ["to_result"]


def _claim(
    inp: SchedulingInput, problem: Problem, option: Option, pods: dict[int, list[PodView]]
) -> NewNodeClaim | None:
    pool = option.pool
    reqs = pool.node_reqs
    for ci in pods:
        reqs = reqs.union(option.alt[ci])
    if any(problem.classes[ci].zonal is not None for ci in pods):
        # the zonal spread counted these pods in the option's zone: the node must launch there
        zone = Requirement(LABEL_TOPOLOGY_ZONE, complement=False, values=(option.offering.zone,))
        reqs = reqs.without(LABEL_TOPOLOGY_ZONE).add(zone)
    used = np.zeros(len(problem.dims.names), dtype=np.int64)
    for ci, ps in pods.items():
        used += np.array(problem.classes[ci].vec, dtype=np.int64) * len(ps)
    if problem.pool_left.get(pool.index) is not None:
        # Limits count the largest type a claim may become: list only the one bought.
        idx = [option.type_index]
    else:
        idx = [
            int(i)
            for i in np.nonzero(np.all(pool.alloc_np >= used, axis=1))[0]
            if pool.types[int(i)].requirements.intersects(reqs) is None
            and pool.types[int(i)].cheapest_offering(reqs) is not None
        ]
        idx.sort(key=lambda i: (pool.types[i].price(reqs), pool.types[i].name))
        idx = idx[: inp.max_instance_types]
    if not idx:
        return None
    claim = new_claim(
        pool,
        problem.dims,
        reqs=reqs,
        types=[pool.types[i] for i in idx],
        used=[int(v) for v in used],
        pods=[p for ps in pods.values() for p in ps],
    )
    return claim if claim.offering is not None else None


def to_result(
    inp: SchedulingInput, problem: Problem, sol: Solution, heuristic: SchedulingResult
) -> SchedulingResult | None:
    """The plan, or None when it cannot be written as claims (the heuristic's then stands)."""
    queues = [list(c.pods) for c in problem.classes]

    def take(ci: int, n: int) -> list[PodView]:
        got, queues[ci] = queues[ci][:n], queues[ci][n:]
        return got

    existing: dict[str, list[PodView]] = {}
    for e, counts in sorted(sol.existing.items()):
        name = problem.cluster.nodes[e].node.name
        existing[name] = [p for ci, n in sorted(counts.items()) for p in take(ci, n)]
    claims: list[NewNodeClaim] = []
    for option, counts in sol.nodes:
        claim = _claim(inp, problem, option, {ci: take(ci, n) for ci, n in sorted(counts.items())})
        if claim is None:
            return None
        claims.append(claim)
    if any(queues):
        return None
    return SchedulingResult(
        node_claims=claims,
        existing=existing,
        errors=dict(heuristic.errors),
        pool_errors=dict(heuristic.pool_errors),
        cost=sum(c.price for c in claims),
        lower_bound=heuristic.lower_bound,
        seconds=heuristic.seconds,
    )
