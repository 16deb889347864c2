"""Instance-type catalogue files: the JSON format of Karpenter's kwok ``instance_types.json``.

A catalogue is a list of ``{"name", "resources", "architecture", "operatingSystems",
"offerings": [{"Price", "Available", "Requirements"}]}`` (DESIGN section 7). `karpy simulate
--instance-types FILE`, `INSTANCE_TYPES_FILE_PATH` and `karpy catalog export` all use it; the
labels a provider derives from an instance type's name are the provider's business, passed in
as `labels`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from karpy.apis.v1.labels import LABEL_ARCH, LABEL_CAPACITY_TYPE, LABEL_OS, LABEL_TOPOLOGY_ZONE
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.quantity import QuantityError, format_bytes, format_milli
from karpy.scheduling.requirements import Requirement, RequirementError, Requirements
from karpy.scheduling.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    ResourceError,
    ResourceMap,
    parse_resources,
)

__all__ = ["CatalogError", "LabelsFor", "dump_catalog", "load_catalog", "parse_catalog"]

DEFAULT_PODS: Final = 110

LabelsFor = Callable[[str, ResourceMap], Sequence[Requirement]]
"""A provider's labels for an instance type, from its name and capacity."""


class CatalogError(ValueError):
    """A catalogue file is malformed; the message names the entry and field."""


def load_catalog(
    path: str | Path,
    *,
    labels: LabelsFor | None = None,
    overhead: Mapping[str, int] | None = None,
) -> list[InstanceType]:
    """Read a catalogue file; raise `CatalogError` naming the entry and field on bad input."""
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as err:
        raise CatalogError(f"{path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise CatalogError(f"{path}: not JSON: {err}") from None
    return parse_catalog(raw, source=str(path), labels=labels, overhead=overhead)


def parse_catalog(
    raw: Any,
    *,
    source: str = "catalog",
    labels: LabelsFor | None = None,
    overhead: Mapping[str, int] | None = None,
) -> list[InstanceType]:
    """Instance types from a parsed catalogue file. `labels` adds a provider's own labels
    (kwok: family, size, cpu, memory) to each type; `overhead` is the kubelet's reservation."""
    if not isinstance(raw, list):
        raise CatalogError(f"{source}: expected a JSON list of instance types")
    out: list[InstanceType] = []
    seen: set[str] = set()
    places: dict[Any, tuple[str, str, Requirements | None]] = {}
    for i, entry in enumerate(raw):
        where = f"{source}[{i}]"
        if not isinstance(entry, Mapping):
            raise CatalogError(f"{where}: expected an object")
        name = entry.get("name")
        if not name or not isinstance(name, str):
            raise CatalogError(f"{where}.name: required")
        where = f"{source}[{i}] ({name})"
        if name in seen:
            raise CatalogError(f"{where}.name: duplicate instance type")
        seen.add(name)
        try:
            capacity = parse_resources(entry.get("resources"), field="resources")
        except (ResourceError, QuantityError) as err:
            raise CatalogError(f"{where}.{err}") from None
        if CPU not in capacity or MEMORY not in capacity:
            raise CatalogError(f"{where}.resources: cpu and memory are required")
        capacity.setdefault(PODS, DEFAULT_PODS)
        arch = entry.get("architecture") or "amd64"
        systems = entry.get("operatingSystems") or ["linux"]
        reqs = Requirements(
            [
                Requirement(LABEL_ARCH, complement=False, values=(str(arch),)),
                Requirement(LABEL_OS, complement=False, values=[str(s) for s in systems]),
                *(labels(name, capacity) if labels else ()),
            ]
        )
        offerings = [
            _offering(o, f"{where}.offerings[{j}]", places)
            for j, o in enumerate(entry.get("offerings") or ())
        ]
        if not offerings:
            raise CatalogError(f"{where}.offerings: at least one offering is required")
        out.append(
            InstanceType(
                name=name,
                capacity=capacity,
                offerings=offerings,
                requirements=reqs,
                overhead=dict(overhead or {}),
            )
        )
    return out


def _offering(
    raw: Any, where: str, places: dict[Any, tuple[str, str, Requirements | None]]
) -> Offering:
    """One offering. `places` keeps the zone, capacity type and other requirements already
    read from each distinct `Requirements` list: a catalogue repeats the same few (a zone and
    a capacity type) for every instance type."""
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: expected an object")
    terms = raw.get("Requirements") or ()
    key = _terms_key(terms)
    place = places.get(key) if key is not None else None
    if place is None:
        place = _place(terms, where)
        if key is not None:
            places[key] = place
    price = raw.get("Price")
    if not isinstance(price, int | float) or isinstance(price, bool) or price < 0:
        raise CatalogError(f"{where}.Price: must be a non-negative number")
    zone, capacity_type, extra = place
    return Offering(
        zone=zone,
        capacity_type=capacity_type,
        price=float(price),
        # The kwok provider treats every offering as available.
        available=bool(raw.get("Available", True)),
        requirements=extra,
    )


def _terms_key(terms: Any) -> Any:
    """A hashable copy of a list of plain requirements, or None for anything else (read
    without reuse, so its errors are reported as they are)."""
    if not isinstance(terms, list | tuple):
        return None
    key: list[tuple[Any, ...]] = []
    for term in terms:
        if type(term) is not dict or not set(term) <= {"key", "operator", "values"}:
            return None
        values = term.get("values")
        if values is not None and (
            type(values) is not list or any(type(v) is not str for v in values)
        ):
            return None
        key.append((term.get("key"), term.get("operator"), tuple(values or ())))
    if any(type(k) is not str or type(op) is not str for k, op, _ in key):
        return None
    return tuple(key)


def _place(terms: Any, where: str) -> tuple[str, str, Requirements | None]:
    try:
        reqs = Requirements.from_node_selector_terms(terms)
    except RequirementError as err:
        raise CatalogError(f"{where}.Requirements: {err}") from None
    zone = reqs.get(LABEL_TOPOLOGY_ZONE)
    ct = reqs.get(LABEL_CAPACITY_TYPE)
    if zone is None or zone.complement or len(zone.values) != 1:
        raise CatalogError(f"{where}.Requirements: needs exactly one {LABEL_TOPOLOGY_ZONE}")
    if ct is None or ct.complement or len(ct.values) != 1:
        raise CatalogError(f"{where}.Requirements: needs exactly one {LABEL_CAPACITY_TYPE}")
    extra = reqs.without(LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE)
    return next(iter(zone.values)), next(iter(ct.values)), extra if len(extra) else None


def dump_catalog(types: Iterable[InstanceType]) -> list[dict[str, Any]]:
    """Instance types back in the catalogue format."""
    out: list[dict[str, Any]] = []
    for t in types:
        arch = t.requirements.get(LABEL_ARCH)
        systems = t.requirements.get(LABEL_OS)
        resources: dict[str, str] = {}
        for name, amount in sorted(t.capacity.items()):
            if name == CPU:
                resources[name] = format_milli(amount)
            elif name in (MEMORY, EPHEMERAL_STORAGE):
                resources[name] = format_bytes(amount)
            else:
                resources[name] = str(amount)
        out.append(
            {
                "name": t.name,
                "resources": resources,
                "architecture": arch.any_value() if arch else "amd64",
                "operatingSystems": sorted(systems.values) if systems else ["linux"],
                "offerings": [
                    {
                        "Price": o.price,
                        "Available": o.available,
                        "Requirements": o.requirements.to_list(),
                    }
                    for o in t.offerings
                ],
            }
        )
    return out
