"""NodeOverlays applied to instance types: adjusted offering prices and extra capacity.

Overlays apply highest weight first (equal weights: the name later in the alphabet first, as
Karpenter orders them). For every NodePool and instance type, an overlay applies when
its requirements are compatible with the type's labels plus the NodePool's (its name and
template labels); a price applies to the type's offerings whose zone and capacity type match.
An offering keeps the first price an overlay gives it, a resource the first quantity.

An overlay conflicts when it touches an offering price, or a resource, that an overlay of the
same weight already set: it is then ignored everywhere (an overlay applies whole or not at all)
and reported, so the NodeOverlay controller can say so in its status. The engine's inputs
(`karpy.state.inputs`, for `karpy run` and `karpy simulate` alike) apply overlays with this
module, and so does the kwok provider when it picks the type to launch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from karpy.apis.v1.labels import LABEL_NODEPOOL
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import ResourceMap, parse_resources

__all__ = [
    "CONFLICT_MESSAGE",
    "Overlay",
    "OverlayResult",
    "Pool",
    "adjusted_price",
    "apply_overlays",
    "overlays_of",
]

JSON = Mapping[str, Any]
CONFLICT_MESSAGE: Final = "conflict with another overlay"


@dataclass(frozen=True)
class Overlay:
    """One NodeOverlay, read."""

    name: str
    weight: int
    requirements: Requirements
    price: str | None = None
    """`price` or `priceAdjustment` as written (a price has no sign, an adjustment has one)."""
    capacity: ResourceMap = field(default_factory=dict)


def adjusted_price(price: float, change: str | None) -> float:
    """`price` after an overlay's `price` (unsigned: the new price) or `priceAdjustment`
    (`+0.5`, `-0.5`, `+10%`, `-15%`); never below zero."""
    if not change:
        return price
    if change[0] not in "+-":
        return float(change)
    if change.endswith("%"):
        return max(price * (1.0 + float(change[:-1]) / 100.0), 0.0)
    return max(price + float(change), 0.0)


def overlays_of(objs: Iterable[JSON]) -> tuple[list[Overlay], dict[str, str]]:
    """The readable overlays in the order they apply, and the unreadable ones (name -> why)."""
    out: list[Overlay] = []
    invalid: dict[str, str] = {}
    for obj in objs:
        name = str((obj.get("metadata") or {}).get("name") or "")
        spec = obj.get("spec") or {}
        try:
            reqs = Requirements.from_node_selector_terms(spec.get("requirements") or ())
            capacity = parse_resources(spec.get("capacity"), field="spec.capacity")
            price = spec.get("price")
            if price is None:
                price = spec.get("priceAdjustment")
            if price is not None:
                adjusted_price(1.0, str(price))
        except ValueError as err:
            invalid[name] = str(err)
            continue
        out.append(
            Overlay(
                name=name,
                weight=int(spec.get("weight") or 0),
                requirements=reqs,
                price=None if price is None else str(price),
                capacity=capacity,
            )
        )
    out.sort(key=lambda o: o.name, reverse=True)
    out.sort(key=lambda o: o.weight, reverse=True)
    return out, invalid


@dataclass
class _PriceSlot:
    change: str
    last_weight: int


@dataclass
class _TypeUpdate:
    prices: dict[int, _PriceSlot] = field(default_factory=dict)
    """Offering index -> the price it gets."""
    capacity: dict[str, int] = field(default_factory=dict)
    last_weight: int | None = None
    last_resources: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Pool:
    """What overlays select on for one NodePool: its name, template labels and instance types."""

    name: str
    labels: Mapping[str, str]
    instance_types: Sequence[InstanceType]


@dataclass(frozen=True)
class OverlayResult:
    types: dict[str, list[InstanceType]]
    """NodePool name -> its instance types, adjusted (unchanged ones as they were)."""
    applied: dict[str, list[str]]
    """Overlay name -> the NodePools it changed some instance type of."""
    conflicts: dict[str, str]
    """Overlay name -> why it was ignored (a conflict with an overlay of the same weight)."""


def _type_requirements(pool: Pool, it: InstanceType) -> Requirements:
    own = Requirements.from_labels(dict(pool.labels)).add(
        Requirement(LABEL_NODEPOOL, complement=False, values=(pool.name,))
    )
    return own.union(it.requirements)


def _matches(overlay: Overlay, template: Pool, it: InstanceType) -> list[int] | None:
    """The indexes of the offerings `overlay` prices on `it` in `template` (None: the overlay
    does not select the type at all)."""
    if _type_requirements(template, it).strict_compatible(overlay.requirements) is not None:
        return None
    offered = [
        i
        for i, o in enumerate(it.offerings)
        if o.requirements.intersects(overlay.requirements) is None
    ]
    return offered if offered else None


def _conflicts(overlay: Overlay, update: _TypeUpdate | None, offerings: list[int]) -> bool:
    if update is None:
        return False
    if overlay.price is not None:
        for i in offerings:
            slot = update.prices.get(i)
            if slot is not None and slot.last_weight == overlay.weight:
                return True
    if overlay.capacity and update.last_weight == overlay.weight:
        return not update.last_resources.isdisjoint(overlay.capacity)
    return False


def _record(overlay: Overlay, update: _TypeUpdate, offerings: list[int]) -> None:
    if overlay.price is not None:
        for i in offerings:
            slot = update.prices.get(i)
            if slot is None:
                update.prices[i] = _PriceSlot(overlay.price, overlay.weight)
            else:
                slot.last_weight = overlay.weight
    if overlay.capacity:
        for resource, quantity in overlay.capacity.items():
            update.capacity.setdefault(resource, quantity)
        update.last_weight = overlay.weight
        update.last_resources = frozenset(overlay.capacity)


def apply_overlays(templates: Sequence[Pool], overlays: Sequence[Overlay]) -> OverlayResult:
    """Each pool's instance types adjusted by `overlays` (in `overlays_of` order)."""
    if not overlays:
        return OverlayResult({t.name: list(t.instance_types) for t in templates}, {}, {})
    updates: dict[tuple[str, str], _TypeUpdate] = {}
    conflicts: dict[str, str] = {}
    applied: dict[str, list[str]] = {}
    for overlay in overlays:
        if overlay.price is None and not overlay.capacity:
            continue
        hits: list[tuple[tuple[str, str], list[int]]] = []
        conflicting = False
        for template in templates:
            for it in template.instance_types:
                offerings = _matches(overlay, template, it)
                if offerings is None:
                    continue
                key = (template.name, it.name)
                if _conflicts(overlay, updates.get(key), offerings):
                    conflicting = True
                    break
                hits.append((key, offerings))
            if conflicting:
                break
        if conflicting:
            conflicts[overlay.name] = CONFLICT_MESSAGE
            continue
        for key, offerings in hits:
            _record(overlay, updates.setdefault(key, _TypeUpdate()), offerings)
        if hits:
            applied[overlay.name] = sorted({pool for (pool, _), _ in hits})
    out = {
        t.name: [
            it if (u := updates.get((t.name, it.name))) is None else _overlaid(it, u)
            for it in t.instance_types
        ]
        for t in templates
    }
    return OverlayResult(out, applied, conflicts)


def _overlaid(it: InstanceType, update: _TypeUpdate) -> InstanceType:
    offerings = [
        o
        if i not in update.prices
        else Offering(
            zone=o.zone,
            capacity_type=o.capacity_type,
            price=adjusted_price(o.price, update.prices[i].change),
            available=o.available,
            requirements=o.requirements,
        )
        for i, o in enumerate(it.offerings)
    ]
    capacity = dict(it.capacity)
    for resource, quantity in update.capacity.items():
        capacity[resource] = quantity
    out = InstanceType(
        name=it.name,
        capacity=capacity,
        offerings=offerings,
        requirements=it.requirements,
        overhead=it.overhead,
    )
    out.price_overlaid = it.price_overlaid or bool(update.prices)
    out.capacity_overlaid = it.capacity_overlaid or bool(update.capacity)
    return out
