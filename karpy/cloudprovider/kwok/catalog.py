"""The built-in kwok catalogue: 144 instance types generated from rules, and the labels the kwok
provider gives every type, exactly as Karpenter's kwok provider derives them:

- `karpenter.kwok.sh/instance-size`: the size of an AWS-style name (`m5.large` -> `large`),
  else the vCPU count as written in the catalogue (`"16"` for `c-16x-amd64-linux`);
- `karpenter.kwok.sh/instance-family`: the name up to its first `.` or `-` (`c`, `m5`), or its
  first letter when it has neither;
- `karpenter.kwok.sh/instance-cpu` and `karpenter.kwok.sh/instance-memory`: the type's cpu and
  memory as Kubernetes prints the quantities (`"16"`, `"32Gi"`).

{1..256} vCPU x memory families c (2 GiB/vCPU), s (4) and m (8) x linux/windows x amd64/arm64,
each sold in four zones as spot and on-demand. It is generated from those rules rather than
shipped as data, so it cannot drift from them. Catalogue files in the same format are read with
`load_kwok_catalog` (`INSTANCE_TYPES_FILE_PATH`, `karpy simulate --instance-types FILE`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from karpy.apis.v1.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    LABEL_CAPACITY_TYPE,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.scheduling.catalog import load_catalog, parse_catalog
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.quantity import QuantityError, format_bytes, format_milli, parse_quantity
from karpy.scheduling.requirements import Requirement
from karpy.scheduling.resources import CPU, MEMORY, ResourceMap

__all__ = [
    "KWOK_LABELS",
    "kwok_catalog_json",
    "kwok_instance_types",
    "kwok_labels",
    "load_kwok_catalog",
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


# AWS names are <family>.<size>; Karpenter's kwok provider reads the size from those.
_AWS_SIZE = re.compile(r"^\w+\.(nano|micro|small|medium|large|\d*xlarge|metal)$")
_FAMILY_DELIMITER = re.compile(r"[.-]")


def instance_size(name: str, cpu: str) -> str:
    """An AWS-style name's size, else the vCPU count as written (`"16"`)."""
    match = _AWS_SIZE.match(name)
    return match.group(1) if match else cpu


def instance_family(name: str) -> str:
    """The name before its first `.` or `-`, or its first letter when it has neither."""
    parts = _FAMILY_DELIMITER.split(name, maxsplit=1)
    return parts[0] if len(parts) > 1 else name[:1]


def kwok_labels(
    name: str,
    capacity: ResourceMap,
    *,
    cpu: str | None = None,
    memory: str | None = None,
) -> Sequence[Requirement]:
    """The kwok labels of an instance type: size, family, cpu and memory. `cpu` and `memory`
    are the quantities as a catalogue file wrote them; without them the capacity is printed
    in Kubernetes' canonical form (the same text for the built-in catalogue)."""
    cpu_text = cpu if cpu is not None else format_milli(capacity[CPU])
    memory_text = memory if memory is not None else format_bytes(capacity[MEMORY])
    return (
        Requirement(KWOK_LABEL_SIZE, complement=False, values=(instance_size(name, cpu_text),)),
        Requirement(KWOK_LABEL_FAMILY, complement=False, values=(instance_family(name),)),
        Requirement(KWOK_LABEL_CPU, complement=False, values=(cpu_text,)),
        Requirement(KWOK_LABEL_MEMORY, complement=False, values=(memory_text,)),
    )


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
    return parse_catalog(_kwok_entries(), source="kwok", labels=kwok_labels, overhead=KWOK_OVERHEAD)


def kwok_catalog_json() -> str:
    """The kwok catalogue as a catalogue file (handy to start a custom one from)."""
    return json.dumps(_kwok_entries(), indent=2)


def load_kwok_catalog(path: str | Path) -> list[InstanceType]:
    """A catalogue file read as the kwok provider sees it: with kwok's labels and overhead.

    The cpu and memory labels print each quantity as Kubernetes does (`32Gi` stays `32Gi`,
    `32G` stays `32G`), so they are taken from the file's text, not from the parsed amounts."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return load_catalog(path, labels=kwok_labels, overhead=KWOK_OVERHEAD)  # says what failed
    written = _written_quantities(raw)

    def labels(name: str, capacity: ResourceMap) -> Sequence[Requirement]:
        cpu, memory = written.get(name, (None, None))
        return kwok_labels(name, capacity, cpu=cpu, memory=memory)

    return parse_catalog(raw, source=str(path), labels=labels, overhead=KWOK_OVERHEAD)


def _written_quantities(raw: object) -> dict[str, tuple[str | None, str | None]]:
    """Each entry's cpu and memory in Kubernetes' canonical text, where they parse (bad
    entries are reported by `parse_catalog`)."""
    out: dict[str, tuple[str | None, str | None]] = {}
    for entry in raw if isinstance(raw, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        resources = entry.get("resources")
        resources = resources if isinstance(resources, Mapping) else {}
        out[entry["name"]] = (_canonical(resources.get(CPU)), _canonical(resources.get(MEMORY)))
    return out


def _canonical(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return str(parse_quantity(str(value)))
    except QuantityError:
        return None
