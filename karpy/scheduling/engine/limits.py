"""NodePool limits over a batch of new NodeClaims, without Karpenter's pessimism.

A NodeClaim lists every instance type that holds its pods (up to 600) and the provider launches
one of them, so until it launches it may become the largest. Karpenter therefore counts each new
NodeClaim as its largest listed type: with a 100-CPU limit and 96- or 192-vCPU types in the
lists, one or two small NodeClaims use the whole limit and the next pod is refused.

karpy keeps the guarantee (whatever the provider launches from the lists, the NodePool stays
within its limits) but spends the limit on what the pods need:

1. A NodeClaim is accepted while its *floor* fits in what is left: its cheapest type, plus,
   under a Strict minValues policy, the smallest types minValues needs. A NodeClaim whose floor
   does not fit is refused (the scheduler may re-pack its pods onto smaller nodes).
2. When the accepted NodeClaims' largest types together exceed the remaining limit, the lists
   are trimmed from the top: per limited resource, one capacity threshold for the whole batch,
   the highest at which every NodeClaim's largest remaining type sums within the limit. Types
   above it are dropped, never the floor, so the order by price is kept and the cheapest type
   that fits each NodeClaim's pods is always still there.

Trimming for one resource only lowers the sums of the others, so one pass over the resources
in a fixed order gives lists that respect every limit.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence

from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import format_resources

__all__ = [
    "NODES",
    "detail",
    "floor",
    "min_values_shortfall",
    "peak",
    "refusal",
    "shortfall",
    "trim",
]

NODES = "nodes"
"""The synthetic limit on how many nodes a NodePool may have."""


def _values(it: InstanceType, key: str, req: Requirement) -> set[str]:
    tr = it.requirements.get(key)
    if tr is None or tr.complement:
        return set()
    return {v for v in tr.values if req.has(v)}


def min_values_shortfall(
    reqs: Requirements, types: Sequence[InstanceType]
) -> tuple[str, int, int] | None:
    """The first requirement whose minValues `types` do not meet: (key, found, wanted)."""
    for key, req in reqs.items():
        if req.min_values is None:
            continue
        values: set[str] = set()
        for t in types:
            values |= _values(t, key, req)
        if len(values) < req.min_values:
            return key, len(values), req.min_values
    return None


def relax_min_values(reqs: Requirements, types: Sequence[InstanceType]) -> Requirements:
    """`reqs` with each minValues `types` do not meet lowered to the values they offer (dropped
    when they offer none): what a NodeClaim records when minValues was relaxed (BestEffort),
    as Karpenter writes it."""
    out = reqs
    for key, req in reqs.items():
        if req.min_values is None:
            continue
        values: set[str] = set()
        for t in types:
            values |= _values(t, key, req)
        if len(values) >= req.min_values:
            continue
        lowered = Requirement(
            key,
            complement=req.complement,
            values=req.values,
            gte=req.gte,
            lte=req.lte,
            min_values=len(values) or None,
        )
        out = out.without(key).add(lowered)
    return out


def floor(
    types: Sequence[InstanceType],
    reqs: Requirements,
    *,
    resources: Sequence[str],
    strict_min_values: bool,
) -> list[int]:
    """Indices of the types trimming must keep: the cheapest (the first), and under Strict
    minValues the smallest others (by `resources`) that bring values minValues still lacks."""
    keep = [0]
    if not strict_min_values or not types:
        return keep
    wanted = [(k, r) for k, r in reqs.items() if r.min_values is not None]
    if not wanted:
        return keep
    seen: dict[str, set[str]] = {k: _values(types[0], k, r) for k, r in wanted}
    order = sorted(
        range(1, len(types)),
        key=lambda i: (tuple(types[i].capacity.get(n, 0) for n in resources), i),
    )
    for i in order:
        unmet = [(k, r) for k, r in wanted if len(seen[k]) < (r.min_values or 0)]
        if not unmet:
            break
        adds = False
        for k, r in unmet:
            new = _values(types[i], k, r) - seen[k]
            if new:
                seen[k] |= new
                adds = True
        if adds:
            keep.append(i)
    return sorted(keep)


def peak(
    types: Sequence[InstanceType], indices: Sequence[int], limits: Mapping[str, int]
) -> dict[str, int]:
    """What a NodeClaim listing `types[indices]` may use of each limited resource (the largest
    capacity among them), plus one node."""
    out: dict[str, int] = {}
    for name in limits:
        if name == NODES:
            out[name] = 1
        else:
            out[name] = max((types[i].capacity.get(name, 0) for i in indices), default=0)
    return out


def shortfall(need: Mapping[str, int], left: Mapping[str, int]) -> str | None:
    """The first resource (by name) of which `need` is more than is `left`, or None."""
    for name in sorted(left):
        if need.get(name, 0) > left[name]:
            return name
    return None


def detail(resource: str, *, need: Mapping[str, int], left: Mapping[str, int]) -> str:
    """What a limit refused: the resource, what the smallest node needed, what was left."""
    wanted = format_resources({resource: need.get(resource, 0)}).get(resource, "0")
    spare = format_resources({resource: max(0, left.get(resource, 0))}).get(resource, "0")
    return f"(the smallest needs {resource} {wanted}, {spare} left within the limit)"


def refusal(pool: str, resource: str, *, need: Mapping[str, int], left: Mapping[str, int]) -> str:
    """Why pods were refused for a limit, naming the NodePool and the resource."""
    return f'all instance types that fit exceed the limits of nodepool "{pool}" ' + detail(
        resource, need=need, left=left
    )


def trim(
    lists: Sequence[Sequence[InstanceType]],
    floors: Sequence[Sequence[int]],
    remaining: Mapping[str, int],
) -> list[list[InstanceType]]:
    """Drop the largest types of the lists until their largest types sum within `remaining`.

    `floors[i]` are indices into `lists[i]` that stay whatever happens; the caller accepted the
    lists because the floors fit. Lists keep their order."""
    kept: list[list[int]] = [list(range(len(types))) for types in lists]
    totals = dict.fromkeys(remaining, 0)
    for types in lists:
        for name, amount in peak(types, range(len(types)), remaining).items():
            totals[name] += amount
    if shortfall(totals, remaining) is None:
        return [list(types) for types in lists]  # the common case: nothing to trim
    for name in sorted(remaining):
        if name == NODES:
            continue
        limit = remaining[name]
        floor_peak = [
            max((lists[i][j].capacity.get(name, 0) for j in floors[i]), default=0)
            for i in range(len(lists))
        ]
        caps = [
            sorted(lists[i][j].capacity.get(name, 0) for j in kept[i]) for i in range(len(lists))
        ]

        def total(threshold: int, caps: list[list[int]] = caps, fp: list[int] = floor_peak) -> int:
            s = 0
            for c, f in zip(caps, fp, strict=True):
                k = bisect_right(c, threshold)
                s += max(f, c[k - 1] if k else 0)
            return s

        top = max((c[-1] for c in caps if c), default=0)
        if total(top) <= limit:
            continue
        thresholds = sorted({0, *(v for c in caps for v in c)})
        lo, hi = 0, len(thresholds) - 1  # total(thresholds[lo]) fits, total(thresholds[hi]) not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if total(thresholds[mid]) <= limit:
                lo = mid
            else:
                hi = mid
        cut = thresholds[lo]
        for i, types in enumerate(lists):
            keep_floor = set(floors[i])
            kept[i] = [
                j for j in kept[i] if types[j].capacity.get(name, 0) <= cut or j in keep_floor
            ]
    return [[types[j] for j in kept[i]] for i, types in enumerate(lists)]
