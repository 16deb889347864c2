"""Drop purchase options no optimal plan needs.

An option is dominated when another hosts every class it hosts, costs no more, has at least as
much room in every dimension and uses no more of any NodePool limit: swapping it for the other
in any plan keeps the plan feasible and no dearer. Of identical options the first is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from karpy.scheduling.engine.exact.problem import Option

__all__ = ["prune"]


def _limit_ok(a: Option, b: Option, left: dict[int, dict[str, int] | None]) -> bool:
    """`b` can stand in for `a` as far as NodePool limits go."""
    lb = left.get(b.pool.index)
    if lb is None:
        return True
    if a.pool is not b.pool:
        return False
    return all(b.capacity.get(k, 0) <= a.capacity.get(k, 0) for k in lb)


def _dominates(
    b: Option, a: Option, left: dict[int, dict[str, int] | None], zonal: frozenset[int]
) -> bool:
    return (
        b.price <= a.price
        and (b.offering.zone == a.offering.zone or not (a.classes & zonal))
        and b.classes >= a.classes
        and all(x >= y for x, y in zip(b.alloc, a.alloc, strict=True))
        and _limit_ok(a, b, left)
    )


def prune(
    options: Sequence[Option],
    left: dict[int, dict[str, int] | None],
    zonal: frozenset[int] = frozenset(),
) -> list[Option]:
    """The options no optimal plan can do without; for options hosting a class with a zonal
    spread (`zonal`), only one in the same zone can stand in."""
    order = sorted(range(len(options)), key=lambda i: (options[i].price, i))
    kept: list[Option] = []
    for i in order:
        a = options[i]
        if any(_dominates(b, a, left, zonal) for b in kept):
            continue
        kept.append(a)
    return kept
