"""Azure catalogue files: what `karpy catalog export --provider azure` prints and `karpy simulate
--instance-types FILE` reads back for a scenario with an AKSNodeClass.

The format is the kwok `instance_types.json` one (`karpy.scheduling.catalog`) with each entry's
`labels` (the SKU's `karpenter.azure.com/sku-*` and AKS labels, as the AWS export carries its
own), and only the offerings that were available. Reading one back gives each type the AKS
kubelet overhead (kube-reserved by vCPUs and memory, from the `sku-cpu` and `sku-memory`
labels, plus the `memory.available<750Mi` eviction threshold), as the live provider does, and
reads the GPU labels an entry does not carry (`sku-gpu-manufacturer`, `sku-gpu-name`) as
`DoesNotExist`, so a NodePool asking for NVIDIA GPUs gets only the entries that have them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.v1.labels import LABEL_ARCH, LABEL_CAPACITY_TYPE, LABEL_OS, LABEL_TOPOLOGY_ZONE
from karpy.cloudprovider.azure.skus import EVICTION_MEMORY_AVAILABLE_MIB, MIB, kube_reserved
from karpy.scheduling.catalog import CatalogError, dump_catalog, parse_catalog
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirement
from karpy.scheduling.resources import CPU, MEMORY, ResourceMap

__all__ = ["dump_azure_catalog", "is_azure_catalog_file", "load_azure_catalog_file"]

_CARRIED = frozenset({LABEL_ARCH, LABEL_OS, LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE})
"""Labels the catalogue format carries in its own fields or in the offerings."""
_ABSENT_AS_DOES_NOT_EXIST = (azure.LABEL_SKU_GPU_MANUFACTURER, azure.LABEL_SKU_GPU_NAME)


def dump_azure_catalog(types: Iterable[InstanceType]) -> list[dict[str, Any]]:
    """Catalogue entries of the types with available offerings, each with its labels."""
    kept: list[InstanceType] = []
    for t in types:
        offerings = [o for o in t.offerings if o.available]
        if offerings:
            kept.append(
                InstanceType(
                    name=t.name,
                    capacity=t.capacity,
                    offerings=offerings,
                    requirements=t.requirements,
                    overhead=t.overhead,
                )
            )
    kept.sort(key=lambda t: t.name)
    entries = dump_catalog(kept)
    for entry, t in zip(entries, kept, strict=True):
        labels = {k: v for k, v in t.requirements.labels().items() if k not in _CARRIED}
        entry["labels"] = dict(sorted(labels.items()))
    return entries


def _read(path: str | Path) -> Any:
    data = Path(path).read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def is_azure_catalog_file(path: str | Path) -> bool:
    """Whether a catalogue file is an Azure export: its entries' labels name Azure SKUs."""
    try:
        raw = _read(path)
    except (OSError, ValueError):
        return False
    return isinstance(raw, list) and any(
        isinstance(e, Mapping)
        and isinstance(e.get("labels"), Mapping)
        and azure.LABEL_SKU_NAME in e["labels"]
        for e in raw
    )


def _overhead(labels: Mapping[str, str], capacity: ResourceMap, where: str) -> ResourceMap:
    try:
        vcpus = int(labels.get(azure.LABEL_SKU_CPU) or capacity[CPU] // 1000)
        memory_gib = int(labels[azure.LABEL_SKU_MEMORY]) / 1024
    except (KeyError, ValueError):
        raise CatalogError(
            f"{where}: labels {azure.LABEL_SKU_CPU} and {azure.LABEL_SKU_MEMORY} (MiB) are required"
        ) from None
    cpu, memory = kube_reserved(vcpus, memory_gib)
    return {CPU: cpu, MEMORY: memory + EVICTION_MEMORY_AVAILABLE_MIB * MIB}


def load_azure_catalog_file(path: str | Path) -> list[InstanceType]:
    """The instance types of an Azure catalogue file, with their labels and AKS overhead."""
    source = str(path)
    raw = _read(path)
    labels_by_name: dict[str, Mapping[str, str]] = {}
    for entry in raw if isinstance(raw, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            labels = entry.get("labels")
            labels_by_name[entry["name"]] = labels if isinstance(labels, Mapping) else {}

    def labels_for(name: str, capacity: ResourceMap) -> Sequence[Requirement]:
        labels = labels_by_name.get(name, {})
        return [
            *(
                Requirement(str(key), complement=False, values=(str(value),))
                for key, value in labels.items()
                if key not in _CARRIED
            ),
            *(
                Requirement(key, complement=False, values=())
                for key in _ABSENT_AS_DOES_NOT_EXIST
                if key not in labels
            ),
        ]

    return [
        InstanceType(
            name=t.name,
            capacity=t.capacity,
            offerings=t.offerings,
            requirements=t.requirements,
            overhead=_overhead(labels_by_name.get(t.name, {}), t.capacity, f"{source} ({t.name})"),
        )
        for t in parse_catalog(raw, source=source, labels=labels_for)
    ]
