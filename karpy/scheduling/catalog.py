"""Instance-type catalogues: the built-in kwok catalogue and files in its JSON format.

The kwok catalogue has 144 types: {1..256} vCPU x memory families c (2 GiB/vCPU), s (4) and
m (8) x linux/windows x amd64/arm64, each sold in four zones as spot and on-demand. It is
generated from those rules rather than shipped as data, so it cannot drift from them. Catalogue
files use the same format as Karpenter's kwok ``instance_types.json`` (DESIGN section 7).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from karpy.apis.v1.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_OS,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.quantity import QuantityError, format_bytes, format_milli
from karpy.scheduling.requirements import Requirement, RequirementError, Requirements
from karpy.scheduling.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    ResourceError,
    parse_resources,
)

__all__ = [
    "KWOK_LABELS",
    "CatalogError",
    "dump_catalog",
    "kwok_instance_types",
    "load_catalog",
    "parse_catalog",
]

GIB: Final = 1024**3
KWOK_LABEL_SIZE: Final = "karpenter.kwok.sh/instance-size"
KWOK_LABEL_FAMILY: Final = "karpenter.kwok.sh/instance-family"
KWOK_LABEL_CPU: Final = "karpenter.kwok.sh/instance-cpu"
KWOK_LABEL_MEMORY: Final = "karpenter.kwok.sh/instance-memory"
KWOK_LABELS: Final = frozenset(
    {KWOK_LABEL_SIZE, KWOK_LABEL_FAMILY, KWOK_LABEL_CPU, KWOK_LABEL_MEMORY}
)

KWOK_CPUS: Final = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
KWOK_FAMILIES: Final = (("c", 2), ("s", 4), ("m", 8))
KWOK_ZONES: Final = ("test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d")
# The kubelet's reservation on every kwok node.
KWOK_OVERHEAD: Final = {CPU: 100, MEMORY: 10 * 1024**2}
DEFAULT_PODS: Final = 110


class CatalogError(ValueError):
    """A catalogue file is malformed; the message names the entry and field."""


def kwok_price(cpu: int, memory_bytes: int) -> float:
    """On-demand price: 0.025 per vCPU plus 0.001 per GB (10^9 bytes)."""
    return 0.025 * cpu + 0.001 * memory_bytes / 1e9


def _kwok_entries() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for family, gib_per_cpu in KWOK_FAMILIES:
        for cpu in KWOK_CPUS:
            memory = cpu * gib_per_cpu * GIB
            for arch in ("amd64", "arm64"):
                for os_name in ("linux", "windows"):
                    od = round(kwok_price(cpu, memory), 6)
                    offerings = []
                    for zone in KWOK_ZONES:
                        for ct, price in (
                            (CAPACITY_TYPE_SPOT, round(od * 0.7, 6)),
                            (CAPACITY_TYPE_ON_DEMAND, od),
                        ):
                            offerings.append(
                                {
                                    "Price": price,
                                    "Available": True,
                                    "Requirements": [
                                        {
                                            "key": LABEL_CAPACITY_TYPE,
                                            "operator": "In",
                                            "values": [ct],
                                        },
                                        {
                                            "key": LABEL_TOPOLOGY_ZONE,
                                            "operator": "In",
                                            "values": [zone],
                                        },
                                    ],
                                }
                            )
                    entries.append(
                        {
                            "name": f"{family}-{cpu}x-{arch}-{os_name}",
                            "offerings": offerings,
                            "architecture": arch,
                            "operatingSystems": [os_name],
                            "resources": {
                                "cpu": str(cpu),
                                "ephemeral-storage": "20Gi",
                                "memory": format_bytes(memory),
                                "pods": str(min(16 * cpu, 1024)),
                            },
                        }
                    )
    return entries


def kwok_instance_types() -> list[InstanceType]:
    """The 144-type kwok catalogue."""
    return parse_catalog(_kwok_entries(), source="kwok")


def kwok_catalog_json() -> str:
    """The kwok catalogue as a catalogue file (handy to start a custom one from)."""
    return json.dumps(_kwok_entries(), indent=2)


def load_catalog(path: str | Path) -> list[InstanceType]:
    """Read a catalogue file; raise `CatalogError` naming the entry and field on bad input."""
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as err:
        raise CatalogError(f"{path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise CatalogError(f"{path}: not JSON: {err}") from None
    return parse_catalog(raw, source=str(path))


def _family_and_size(name: str, cpu_millis: int) -> tuple[str, str]:
    family = name.split(".")[0].split("-")[0]
    parts = name.replace(".", "-").split("-")
    size = parts[1] if len(parts) > 1 and parts[1] else f"{cpu_millis // 1000}x"
    return family, size


def parse_catalog(raw: Any, *, source: str = "catalog") -> list[InstanceType]:
    if not isinstance(raw, list):
        raise CatalogError(f"{source}: expected a JSON list of instance types")
    out: list[InstanceType] = []
    seen: set[str] = set()
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
        family, size = _family_and_size(name, capacity[CPU])
        reqs = Requirements(
            [
                Requirement(LABEL_ARCH, complement=False, values=(str(arch),)),
                Requirement(LABEL_OS, complement=False, values=[str(s) for s in systems]),
                Requirement(KWOK_LABEL_FAMILY, complement=False, values=(family,)),
                Requirement(KWOK_LABEL_SIZE, complement=False, values=(size,)),
                Requirement(KWOK_LABEL_CPU, complement=False, values=(str(capacity[CPU] // 1000),)),
                Requirement(
                    KWOK_LABEL_MEMORY, complement=False, values=(str(capacity[MEMORY] // 1024**2),)
                ),
            ]
        )
        offerings = [
            _offering(o, f"{where}.offerings[{j}]")
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
                overhead=KWOK_OVERHEAD,
            )
        )
    return out


def _offering(raw: Any, where: str) -> Offering:
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: expected an object")
    try:
        reqs = Requirements.from_node_selector_terms(raw.get("Requirements") or ())
    except RequirementError as err:
        raise CatalogError(f"{where}.Requirements: {err}") from None
    zone = reqs.get(LABEL_TOPOLOGY_ZONE)
    ct = reqs.get(LABEL_CAPACITY_TYPE)
    if zone is None or zone.complement or len(zone.values) != 1:
        raise CatalogError(f"{where}.Requirements: needs exactly one {LABEL_TOPOLOGY_ZONE}")
    if ct is None or ct.complement or len(ct.values) != 1:
        raise CatalogError(f"{where}.Requirements: needs exactly one {LABEL_CAPACITY_TYPE}")
    price = raw.get("Price")
    if not isinstance(price, int | float) or isinstance(price, bool) or price < 0:
        raise CatalogError(f"{where}.Price: must be a non-negative number")
    extra = reqs.without(LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE)
    return Offering(
        zone=next(iter(zone.values)),
        capacity_type=next(iter(ct.values)),
        price=float(price),
        # The kwok provider treats every offering as available.
        available=bool(raw.get("Available", True)),
        requirements=extra if len(extra) else None,
    )


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


def types_by_name(types: Sequence[InstanceType]) -> dict[str, InstanceType]:
    return {t.name: t for t in types}
