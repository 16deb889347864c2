"""Azure VM sizes from the Resource SKUs API (`GET .../providers/Microsoft.Compute/skus`), and the
node capacity, overhead and labels the upstream Azure provider derives from them.

A record is the ARM JSON of one `ResourceSku` (`name`, `size`, `family`, `locationInfo`,
`capabilities` as name/value strings, `restrictions`). Allocatable follows upstream
(`pkg/providers/instancetype/instancetype.go`): memory capacity is the SKU's whole GiB less
`VM_MEMORY_OVERHEAD_PERCENT`; kube-reserved is AKS's bracketed "tax" on CPU cores and memory GiB
(AKS's documented resource reservations); system-reserved is nothing; the hard eviction threshold
is `memory.available` 750Mi; ephemeral storage is the OS disk; pods from the network plugin.

GPUs: the record's `GPUs` capability counts them; they are NVIDIA GPUs a node can use (the
`nvidia.com/gpu` capacity and the `sku-gpu-*` labels) only on the sizes AKS installs NVIDIA
drivers on (`karpy.cloudprovider.azure.gpu`), as upstream counts them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.cloudprovider.azure.gpu import is_nvidia_size

__all__ = [
    "EVICTION_MEMORY_AVAILABLE_MIB",
    "NodeResources",
    "Sku",
    "SkuName",
    "kube_reserved",
    "max_pods",
    "node_resources",
    "nvidia_gpus",
    "parse_sku",
    "parse_sku_name",
    "sku_labels",
]

MIB: Final = 1024 * 1024
GIB: Final = 1024 * MIB
EVICTION_MEMORY_AVAILABLE_MIB: Final = 750
"""AKS's hard eviction threshold `memory.available<750Mi`."""

# (upper bound, rate): the rate applies to the part of the amount below the bound and above the
# previous bound. Memory in GiB, CPU in cores; AKS's reservation brackets.
_MEMORY_BRACKETS_GIB: Final = (
    (4.0, 0.25),
    (8.0, 0.20),
    (16.0, 0.10),
    (128.0, 0.06),
    (math.inf, 0.02),
)
_CPU_BRACKETS_CORES: Final = ((1.0, 0.06), (2.0, 0.04), (4.0, 0.02), (math.inf, 0.01))

NETWORK_PLUGIN_AZURE: Final = "azure"
NETWORK_PLUGIN_KUBENET: Final = "kubenet"
NETWORK_PLUGIN_NONE: Final = "none"
NETWORK_PLUGIN_MODE_OVERLAY: Final = "overlay"


def _tax(amount: float, brackets: Sequence[tuple[float, float]]) -> float:
    total, lower = 0.0, 0.0
    for upper, rate in brackets:
        if amount <= lower:
            break
        total += (min(upper, amount) - lower) * rate
        lower = upper
    return total


def kube_reserved(vcpus: int, memory_gib: float) -> tuple[int, int]:
    """AKS's kube-reserved as (CPU millicores, memory bytes): both truncated as upstream does
    (memory to whole MiB)."""
    cpu_milli = int(1000 * _tax(float(vcpus), _CPU_BRACKETS_CORES))
    memory_mib = int(1024 * _tax(memory_gib, _MEMORY_BRACKETS_GIB))
    return cpu_milli, memory_mib * MIB


def max_pods(
    *, network_plugin: str, network_plugin_mode: str = "", override: int | None = None
) -> int:
    """Pods per node: the AKSNodeClass's maxPods, else 250 with no plugin or Azure CNI overlay,
    30 with Azure CNI on the node subnet, 110 otherwise (kubenet)."""
    if override is not None:
        return override
    if network_plugin == NETWORK_PLUGIN_NONE:
        return 250
    if network_plugin == NETWORK_PLUGIN_AZURE:
        return 250 if network_plugin_mode == NETWORK_PLUGIN_MODE_OVERLAY else 30
    return 110


@dataclass(frozen=True, slots=True)
class Sku:
    """The facts karpy reads from one Resource SKU record of a virtual machine size."""

    name: str
    size: str
    family: str
    vcpus: int
    memory_gib: float
    architecture: str
    zones: tuple[str, ...]
    capabilities: Mapping[str, str] = field(repr=False)
    restricted_zones: frozenset[str] = frozenset()
    restricted_in_location: bool = False

    def capability(self, name: str, default: str = "") -> str:
        return self.capabilities.get(name, default)

    def flag(self, name: str) -> bool:
        return self.capability(name).lower() == "true"

    @property
    def gpus(self) -> int:
        """The GPUs of the size (the `GPUs` capability; 0 without one or when unreadable)."""
        try:
            return max(0, int(self.capability("GPUs", "0")))
        except ValueError:
            return 0

    @property
    def hyperv_generations(self) -> tuple[str, ...]:
        """The Hyper-V generations the size boots (`1`, `2`), from the `HyperVGenerations`
        capability ("V1", "V2" or "V1,V2", read without regard to case or spaces, as upstream's
        SKU library reads it); none for a record without the capability, which then matches no
        node image, as upstream's."""
        listed = {part.strip().upper() for part in self.capability("HyperVGenerations").split(",")}
        return tuple(
            generation
            for name, generation in (
                ("V1", azure.HYPERV_GENERATION_V1),
                ("V2", azure.HYPERV_GENERATION_V2),
            )
            if name in listed
        )

    @property
    def available_zones(self) -> tuple[str, ...]:
        """Zones the subscription may use (restrictions removed); empty for a regional SKU."""
        return tuple(z for z in self.zones if z not in self.restricted_zones)


def parse_sku(record: Mapping[str, Any], *, location: str) -> Sku | None:
    """A `virtualMachines` Resource SKU record for `location`, or None for other kinds."""
    if record.get("resourceType") != "virtualMachines":
        return None
    caps = {str(c["name"]): str(c["value"]) for c in record.get("capabilities") or ()}
    zones: list[str] = []
    for info in record.get("locationInfo") or ():
        if str(info.get("location", "")).lower() == location.lower():
            zones.extend(str(z) for z in info.get("zones") or ())
    restricted_zones: set[str] = set()
    restricted_location = False
    for restriction in record.get("restrictions") or ():
        info = restriction.get("restrictionInfo") or {}
        if restriction.get("type") == "Location":
            if location.lower() in {str(x).lower() for x in info.get("locations") or ()}:
                restricted_location = True
        elif restriction.get("type") == "Zone":
            restricted_zones.update(str(z) for z in info.get("zones") or ())
    arch = {"x64": "amd64", "Arm64": "arm64"}.get(caps.get("CpuArchitectureType", "x64"), "amd64")
    return Sku(
        name=str(record["name"]),
        size=str(record.get("size") or str(record["name"]).removeprefix("Standard_")),
        family=str(record.get("family", "")),
        vcpus=int(caps.get("vCPUs", "0")),
        memory_gib=float(caps.get("MemoryGB", "0")),  # named GB, counted in GiB
        architecture=arch,
        zones=tuple(sorted(zones)),
        capabilities=caps,
        restricted_zones=frozenset(restricted_zones),
        restricted_in_location=restricted_location,
    )


@dataclass(frozen=True, slots=True)
class NodeResources:
    """Capacity and allocatable of a node of one SKU, in base units (millicores, bytes)."""

    cpu_milli: int
    memory: int
    ephemeral_storage: int
    pods: int
    kube_reserved_cpu_milli: int
    kube_reserved_memory: int
    eviction_memory: int

    @property
    def allocatable_cpu_milli(self) -> int:
        return self.cpu_milli - self.kube_reserved_cpu_milli

    @property
    def allocatable_memory(self) -> int:
        return self.memory - self.kube_reserved_memory - self.eviction_memory


def node_resources(
    sku: Sku,
    *,
    vm_memory_overhead_percent: float = 0.075,
    os_disk_size_gb: int = 128,
    pods: int = 110,
) -> NodeResources:
    """What a node of `sku` offers: memory is the SKU's whole GiB less the VM overhead share
    (rounded up to a byte), ephemeral storage the OS disk in GB (10^9 bytes)."""
    whole = int(sku.memory_gib) * GIB
    memory = whole - math.ceil(whole * vm_memory_overhead_percent)
    cpu_reserved, memory_reserved = kube_reserved(sku.vcpus, sku.memory_gib)
    return NodeResources(
        cpu_milli=sku.vcpus * 1000,
        memory=memory,
        ephemeral_storage=os_disk_size_gb * 10**9,
        pods=pods,
        kube_reserved_cpu_milli=cpu_reserved,
        kube_reserved_memory=memory_reserved,
        eviction_memory=EVICTION_MEMORY_AVAILABLE_MIB * MIB,
    )


@dataclass(frozen=True, slots=True)
class SkuName:
    """The parts of a VM size name (`Standard_D4pls_v6`: family D, series Dpls_v6, version 6)."""

    family: str
    series: str
    version: str
    accelerator: str = ""
    """The GPU named in the size (`A100` of `NC24ads_A100_v4`), else empty."""


# [Standard_]<family letters><subfamily letters><vCPUs>[-<constrained vCPUs>]<features>
# [_<accelerator>][_v<version>][_Promo]
_SIZE = re.compile(
    r"^(?:Standard_|Basic_)?(?P<family>[A-Z])(?P<subfamily>[A-Z]*?)(?P<cpus>\d+)(?:-\d+)?"
    r"(?P<features>[a-z]*)(?:_(?P<accelerator>[A-Z][A-Za-z0-9]*))?(?:_v(?P<version>\d+))?"
    r"(?:_Promo)?$"
)


def parse_sku_name(name: str) -> SkuName | None:
    """The family, series and version of a VM size name, or None when it is not one."""
    match = _SIZE.match(name)
    if match is None:
        return None
    version = match["version"] or "1"
    series = match["family"] + match["subfamily"] + match["features"]
    if match["accelerator"]:
        series += "_" + match["accelerator"]
    if match["version"]:
        series += "_v" + match["version"]
    return SkuName(
        family=match["family"],
        series=series,
        version=version,
        accelerator=match["accelerator"] or "",
    )


def nvidia_gpus(sku: Sku) -> int:
    """The NVIDIA GPUs a node of `sku` offers: the record's count on a size AKS installs NVIDIA
    drivers on, else 0 (upstream's `nvidia.com/gpu` capacity and `sku-gpu-count`)."""
    return sku.gpus if is_nvidia_size(sku.name) else 0


def sku_labels(sku: Sku) -> dict[str, str]:
    """The `karpenter.azure.com/sku-*` labels every node of `sku` carries (the single-valued ones;
    ephemeral OS disk and zone labels need more than the record and come with launch).

    `sku-gpu-count` is on every size (`0` without NVIDIA GPUs); `sku-gpu-manufacturer` and
    `sku-gpu-name` (the GPU the size name carries, when it names one) only on NVIDIA sizes."""
    out = {
        azure.LABEL_SKU_NAME: sku.name,
        azure.LABEL_SKU_CPU: str(sku.vcpus),
        azure.LABEL_SKU_MEMORY: str(int(sku.memory_gib * 1024)),
        azure.AKS_LABEL_CPU: str(sku.vcpus),
        azure.AKS_LABEL_MEMORY: str(int(sku.memory_gib * 1024)),
        azure.LABEL_SKU_ACCELERATED_NETWORKING: str(
            sku.flag("AcceleratedNetworkingEnabled")
        ).lower(),
        azure.LABEL_SKU_STORAGE_PREMIUM_CAPABLE: str(sku.flag("PremiumIO")).lower(),
    }
    parts = parse_sku_name(sku.name)
    if parts is not None:
        out[azure.LABEL_SKU_FAMILY] = parts.family
        out[azure.LABEL_SKU_SERIES] = parts.series
        out[azure.LABEL_SKU_VERSION] = parts.version
    out[azure.LABEL_SKU_GPU_COUNT] = str(nvidia_gpus(sku))
    if is_nvidia_size(sku.name):
        out[azure.LABEL_SKU_GPU_MANUFACTURER] = azure.MANUFACTURER_NVIDIA
        if parts is not None and parts.accelerator:
            out[azure.LABEL_SKU_GPU_NAME] = parts.accelerator
    return out
