"""Instance types and their offerings: what a cloud can launch, where, and at what price.

An `InstanceType` carries the labels a node of that type gets (as requirements), its capacity
and the overhead the kubelet reserves; `allocatable` is capacity minus overhead. Each `Offering`
is one (zone, capacity type) the type can be bought in, with an hourly price and whether it is
available right now. Cloud providers build these; the scheduler only reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from karpy.apis.provider_labels import INSTANCE_TYPE_RESTRICTED_LABELS
from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import ResourceMap, subtract

__all__ = ["InstanceType", "Offering", "order_by_price", "selectable_keys"]

_NO_PRICE: Final = float("inf")

# The requirements of each (zone, capacity type), shared by the offerings there (Requirements
# are immutable): a catalogue repeats the same few for every instance type.
_PLACES: dict[tuple[str, str], Requirements] = {}


class Offering:
    """One way to buy an instance type: a zone, a capacity type, a price, availability."""

    __slots__ = ("available", "capacity_type", "price", "requirements", "zone")

    def __init__(
        self,
        *,
        zone: str,
        capacity_type: str,
        price: float,
        available: bool = True,
        requirements: Requirements | None = None,
    ) -> None:
        self.zone = zone
        self.capacity_type = capacity_type
        self.price = float(price)
        self.available = available
        base = _PLACES.get((zone, capacity_type))
        if base is None:
            base = _PLACES[(zone, capacity_type)] = Requirements(
                [
                    Requirement(LABEL_TOPOLOGY_ZONE, complement=False, values=(zone,)),
                    Requirement(LABEL_CAPACITY_TYPE, complement=False, values=(capacity_type,)),
                ]
            )
        self.requirements = base.union(requirements) if requirements else base

    def compatible(self, reqs: Requirements) -> bool:
        z = reqs.get(LABEL_TOPOLOGY_ZONE)
        if z is not None and not z.has(self.zone):
            return False
        c = reqs.get(LABEL_CAPACITY_TYPE)
        if c is not None and not c.has(self.capacity_type):
            return False
        if len(self.requirements) > 2:
            return self.requirements.intersects(reqs) is None
        return True

    def __repr__(self) -> str:
        state = "" if self.available else " unavailable"
        return f"Offering({self.zone}/{self.capacity_type} ${self.price}{state})"


class InstanceType:
    """A launchable node shape. Treat as immutable after construction."""

    __slots__ = (
        "allocatable",
        "capacity",
        "capacity_overlaid",
        "name",
        "offerings",
        "overhead",
        "price_overlaid",
        "requirements",
    )

    def __init__(
        self,
        *,
        name: str,
        capacity: Mapping[str, int],
        offerings: Sequence[Offering],
        requirements: Requirements | None = None,
        overhead: Mapping[str, int] | None = None,
    ) -> None:
        self.name = name
        self.capacity: ResourceMap = dict(capacity)
        self.overhead: ResourceMap = dict(overhead or {})
        self.allocatable: ResourceMap = {
            k: max(v, 0) for k, v in subtract(self.capacity, self.overhead).items()
        }
        self.offerings = tuple(offerings)
        zones = sorted({o.zone for o in self.offerings})
        capacity_types = sorted({o.capacity_type for o in self.offerings})
        base = [
            Requirement(LABEL_INSTANCE_TYPE, complement=False, values=(name,)),
            Requirement(LABEL_TOPOLOGY_ZONE, complement=False, values=zones),
            Requirement(LABEL_CAPACITY_TYPE, complement=False, values=capacity_types),
        ]
        self.requirements = (requirements or Requirements()).add(*base)
        # Whether a NodeOverlay priced some offering / added capacity (NodeClaim annotations).
        self.price_overlaid = False
        self.capacity_overlaid = False

    def cheapest_offering(self, reqs: Requirements | None = None) -> Offering | None:
        """The cheapest available offering compatible with `reqs` (ties: zone, then type)."""
        best: Offering | None = None
        for o in self.offerings:
            if not o.available or (reqs is not None and not o.compatible(reqs)):
                continue
            if best is None or (o.price, o.zone, o.capacity_type) < (
                best.price,
                best.zone,
                best.capacity_type,
            ):
                best = o
        return best

    def price(self, reqs: Requirements | None = None) -> float:
        o = self.cheapest_offering(reqs)
        return o.price if o is not None else _NO_PRICE

    def __repr__(self) -> str:
        return f"InstanceType({self.name})"


def order_by_price(
    types: Iterable[InstanceType], reqs: Requirements | None = None
) -> list[InstanceType]:
    """Ascending by the cheapest available compatible offering; types without one go last."""
    return sorted(types, key=lambda t: (t.price(reqs), t.name))


def selectable_keys(types: Iterable[InstanceType]) -> set[str]:
    """The label keys the instance types define that pods may select on although they are not
    Karpenter's well-known labels: all of them but those a provider keeps to itself
    (`INSTANCE_TYPE_RESTRICTED_LABELS`, such as the Azure SKUs' Hyper-V generation)."""
    keys = {key for it in types for key in it.requirements}
    return keys - INSTANCE_TYPE_RESTRICTED_LABELS
