"""From packed nodes to the NodeClaims the provisioner creates.

Each packed node lists every instance type that holds its pods, cheapest first and truncated to
the solve's maximum, with minValues checked; its NodeClaim carries the pool's labels and taints,
the pinned requirements, the capacity types its offerings allow, and its pods' requests plus
the DaemonSet overhead (as Karpenter writes spec.resources.requests).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
)
from karpy.scheduling.engine import limits
from karpy.scheduling.engine.model import NewNodeClaim
from karpy.scheduling.engine.packer import OpenNode
from karpy.scheduling.engine.pools import Dims, PoolContext
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirement, Requirements

__all__ = ["ClaimBuilder", "PackedNode", "TypeChoice", "instance_types_for", "new_claim"]


@dataclass(eq=False)
class PackedNode:
    """A new node as packed: its pool, the node, its pods, the instance types it lists, and
    whether minValues had to be relaxed for them."""

    pool: PoolContext
    node: OpenNode
    pods: list[PodView]
    types: list[InstanceType]
    relaxed: bool


class TypeChoice(NamedTuple):
    """The types a node may list (empty when none may, with the reason) and whether minValues
    was relaxed to list them."""

    types: list[InstanceType]
    relaxed: bool
    reason: str


def instance_types_for(
    pool: PoolContext, node: OpenNode, *, max_types: int, strict_min_values: bool
) -> TypeChoice:
    """Every type that holds the node's pods, cheapest first, truncated; minValues checked."""
    used = np.array(node.used, dtype=np.int64)
    ok = pool.np_mask(node.mask) & np.all(pool.alloc_np >= used, axis=1)
    prices = pool.prices(node.reqs)
    idx = [int(i) for i in np.flatnonzero(ok) if math.isfinite(prices[int(i)])]
    idx.sort(key=lambda i: (prices[i], pool.types[i].name))
    idx = idx[:max_types]
    types = [pool.types[i] for i in idx]
    if not types:
        return TypeChoice(
            [], False, f'incompatible with nodepool "{pool.name}": no instance type holds the pods'
        )
    relaxed = False
    short = limits.min_values_shortfall(node.reqs, types)
    if short is not None:
        key, found, wanted = short
        if strict_min_values:
            return TypeChoice(
                [],
                False,
                f'incompatible with nodepool "{pool.name}": '
                f"minValues requirement not met for {key} ({found} < {wanted})",
            )
        relaxed = True
    return TypeChoice(types, relaxed, "")


class _Interned(NamedTuple):
    requirement: Requirement
    types: list[InstanceType]


class ClaimBuilder:
    """Builds the NodeClaims of one solve, sharing one instance-type requirement (and one
    list) between the claims that list the same types."""

    def __init__(self, dims: Dims) -> None:
        self.dims = dims
        self._interned: dict[tuple[tuple[str, ...], int | None], _Interned] = {}

    def build(self, packed: PackedNode) -> NewNodeClaim:
        """The NodeClaim of a packed node, with its pool's labels and taints, the capacity
        types its types' offerings allow, and its requests including DaemonSet overhead."""
        pool = packed.pool
        node = packed.node
        reqs = node.reqs.without(LABEL_HOSTNAME)
        it_req = reqs.get(LABEL_INSTANCE_TYPE)
        min_values = None if it_req is None else it_req.min_values
        # Thousands of claims often list the same types: share one requirement (and one list)
        # per distinct list instead of a set of hundreds of names each.
        names = tuple(t.name for t in packed.types)
        interned = self._interned.get((names, min_values))
        if interned is None:
            interned = _Interned(
                Requirement(
                    LABEL_INSTANCE_TYPE, complement=False, values=names, min_values=min_values
                ),
                list(packed.types),
            )
            self._interned[(names, min_values)] = interned
        return new_claim(
            pool,
            self.dims,
            reqs=reqs,
            types=interned.types,
            used=node.used,
            pods=packed.pods,
            type_requirement=interned.requirement,
            relaxed=packed.relaxed,
        )


def new_claim(
    pool: PoolContext,
    dims: Dims,
    *,
    reqs: Requirements,
    types: list[InstanceType],
    used: Sequence[int],
    pods: list[PodView],
    type_requirement: Requirement | None = None,
    relaxed: bool = False,
) -> NewNodeClaim:
    """The NodeClaim of one new node of `pool` for `pods` (whose requests add up to `used`),
    listing `types` cheapest first (the list is kept, not copied). The heuristic's packed
    nodes and the exact planner's solutions both become claims here, so they carry the same
    requirements, labels and requests.

    Its requirements are `reqs` with the instance types (`type_requirement`, or one naming
    `types`) and the capacity types their offerings allow; its labels are the pool's plus what
    the requirements pin; its requests are `used` plus the smallest DaemonSet overhead among
    the types (as Karpenter writes spec.resources.requests). `offering` is None when no type
    has an offering the requirements allow.
    """
    if type_requirement is None:
        type_requirement = Requirement(
            LABEL_INSTANCE_TYPE, complement=False, values=tuple(t.name for t in types)
        )
    reqs = reqs.without(LABEL_INSTANCE_TYPE).add(type_requirement)
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
    if relaxed:
        reqs = limits.relax_min_values(reqs, types)
    overhead = list(pool.overhead[pool.type_index[types[0].name]])
    for t in types[1:]:
        o = pool.overhead[pool.type_index[t.name]]
        for r in range(len(overhead)):
            if o[r] < overhead[r]:
                overhead[r] = o[r]
    labels = dict(pool.template.labels)
    labels[LABEL_NODEPOOL] = pool.name
    labels.update(reqs.labels())
    return NewNodeClaim(
        nodepool=pool.name,
        requirements=reqs,
        instance_types=types,
        requests=dims.map([u + o for u, o in zip(used, overhead, strict=True)]),
        pods=pods,
        offering=types[0].cheapest_offering(reqs),
        labels=labels,
        taints=pool.template.taints,
        startup_taints=pool.template.startup_taints,
        min_values_relaxed=relaxed,
    )
