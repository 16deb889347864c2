"""The built-in kwok catalogue: 144 instance types generated from rules, and the labels the kwok
provider gives every type.

{1..256} vCPU x memory families c (2 GiB/vCPU), s (4) and m (8) x linux/windows x amd64/arm64,
each sold in four zones as spot and on-demand. It is generated from those rules rather than
shipped as data, so it cannot drift from them. Catalogue files in the same format are read with
`load_kwok_catalog` (`INSTANCE_TYPES_FILE_PATH`, `karpy simulate --instance-types FILE`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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
from karpy.scheduling.quantity import format_bytes
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


def _family_and_size(name: str, cpu_millis: int) -> tuple[str, str]:
    family = name.split(".")[0].split("-")[0]
    parts = name.replace(".", "-").split("-")
    size = parts[1] if len(parts) > 1 and parts[1] else f"{cpu_millis // 1000}x"
    return family, size


def kwok_labels(name: str, capacity: ResourceMap) -> Sequence[Requirement]:
    """The kwok labels of an instance type: family, size, vCPUs and memory (MiB)."""
    family, size = _family_and_size(name, capacity[CPU])
    return (
        Requirement(KWOK_LABEL_FAMILY, complement=False, values=(family,)),
        Requirement(KWOK_LABEL_SIZE, complement=False, values=(size,)),
        Requirement(KWOK_LABEL_CPU, complement=False, values=(str(capacity[CPU] // 1000),)),
        Requirement(
            KWOK_LABEL_MEMORY, complement=False, values=(str(capacity[MEMORY] // 1024**2),)
        ),
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
    """A catalogue file read as the kwok provider sees it: with kwok's labels and overhead."""
    return load_catalog(path, labels=kwok_labels, overhead=KWOK_OVERHEAD)
