"""What is left of each NodePool's limits during one solve.

A pool's limits minus what it already owns (its existing nodes' capacity, or the usage the
caller passes) is what the new NodeClaims of this solve may spend. Instance types that alone
would exceed it are left out of the pool's choices up front; limits.py decides how a batch of
NodeClaims shares what is left.
"""

from __future__ import annotations

from collections.abc import Sequence

from karpy.scheduling.engine import limits
from karpy.scheduling.engine.model import SchedulingInput
from karpy.scheduling.engine.pools import PoolContext, bits
from karpy.scheduling.instancetypes import InstanceType

__all__ = ["PoolLimits", "consume", "limits_left", "mask_within"]

_NODES = limits.NODES


class PoolLimits:
    """Remaining limits per pool (None: unlimited), and the types that fit in them."""

    def __init__(self, pools: Sequence[PoolContext], inp: SchedulingInput) -> None:
        self.remaining = limits_left(pools, inp)
        self.masks: list[int] = []
        for pool in pools:
            left = self.remaining[pool.index]
            self.masks.append(pool.all_mask if left is None else mask_within(pool, left))

    def reason(self, pool: PoolContext, fit: int) -> str:
        """Which limit keeps every type in `fit` out: the resource whose smallest need among
        them is more than what is left."""
        left = self.remaining[pool.index] or {}
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


def limits_left(pools: Sequence[PoolContext], inp: SchedulingInput) -> list[dict[str, int] | None]:
    """What is left of each pool's limits (None: unlimited) after the nodes it already has."""
    usage: dict[str, dict[str, int]] = {}
    if inp.pool_usage is not None:
        usage = {k: dict(v) for k, v in inp.pool_usage.items()}
    else:
        for n in inp.existing_nodes:
            if n.nodepool:
                acc = usage.setdefault(n.nodepool, {})
                for name, amount in (n.capacity or n.allocatable).items():
                    acc[name] = acc.get(name, 0) + amount
                acc[_NODES] = acc.get(_NODES, 0) + 1
    out: list[dict[str, int] | None] = []
    for pool in pools:
        pool_limits = pool.template.limits
        if pool_limits is None:
            out.append(None)
            continue
        used = usage.get(pool.name, {})
        out.append({k: v - used.get(k, 0) for k, v in pool_limits.items()})
    return out


def mask_within(pool: PoolContext, left: dict[str, int]) -> int:
    """The pool's types that alone fit in what is `left` of its limits."""
    if left.get(_NODES, 1) < 1:
        return 0
    mask = 0
    for i, it in enumerate(pool.types):
        if all(it.capacity.get(k, 0) <= v for k, v in left.items() if k != _NODES):
            mask |= 1 << i
    return mask


def consume(remaining: dict[str, int], types: list[InstanceType]) -> None:
    """Take a new NodeClaim out of `remaining`: it may become its largest listed type."""
    for k in list(remaining):
        if k == _NODES:
            remaining[k] -= 1
        else:
            remaining[k] -= max(t.capacity.get(k, 0) for t in types)
