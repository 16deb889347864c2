"""Capacity and kubelet overhead of an EC2 instance type, as Karpenter's AWS provider computes
them (reference §2.2), from a `DescribeInstanceTypes` entry (`InstanceTypeInfo`, a dict in
botocore's shape).

Capacity: vCPUs; memory minus 64Mi on arm64 (Graviton CMA) minus the VM overhead
(`ceil(MiB x VM_MEMORY_OVERHEAD_PERCENT)`); pods from the ENI limits or the kubelet; the root
volume as ephemeral storage; GPUs, Neuron devices and EFA as extended resources. Overhead: the
kube-reserved CPU bands and `11 x pods + 255Mi`, the user's system-reserved, and the hard
eviction threshold (100Mi memory, 10% of storage). The scheduler subtracts overhead from
capacity; allocatable is never computed here twice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClassSpec, KubeletConfiguration
from karpy.scheduling.quantity import milli_value, value
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, ResourceMap

__all__ = [
    "DEFAULT_VM_MEMORY_OVERHEAD_PERCENT",
    "MIB",
    "CapacitySettings",
    "capacity",
    "capacity_settings_for",
    "eni_limited_pods",
    "eviction_threshold",
    "kube_reserved",
    "kube_reserved_cpu",
    "max_pods",
    "memory_mib",
    "overhead",
]

MIB: Final = 1024**2
GIB: Final = 1024**3
DEFAULT_VM_MEMORY_OVERHEAD_PERCENT: Final = 0.075
DEFAULT_PODS: Final = 110
DEFAULT_EPHEMERAL_STORAGE: Final = 20 * GIB
EVICTION_MEMORY: Final = 100 * MIB
EVICTION_STORAGE_FRACTION: Final = 0.10

# Families whose pod density follows the ENI limits (Windows always gets 110).
ENI_LIMITED_FAMILIES: Final = frozenset({"AL2", "AL2023", "Bottlerocket", "Custom"})
# Families whose kube-reserved memory uses the ENI pod count even when maxPods is set.
ENI_LIMITED_MEMORY_OVERHEAD_FAMILIES: Final = frozenset({"AL2", "AL2023", "Custom"})
# Bottlerocket ignores podsPerCore; every other family honours it.
NO_PODS_PER_CORE_FAMILIES: Final = frozenset({"Bottlerocket"})

# (start, end, fraction) of millicores: 6% of the first core, 1% of the second, 0.5% of the
# third and fourth, 0.25% of the rest.
_CPU_BANDS: Final = (
    (0, 1000, 0.06),
    (1000, 2000, 0.01),
    (2000, 4000, 0.005),
    (4000, 1 << 31, 0.0025),
)

GPU_RESOURCES: Final = {
    "nvidia": "nvidia.com/gpu",
    "amd": "amd.com/gpu",
    "habana": "habana.ai/gaudi",
}
NEURON: Final = "aws.amazon.com/neuron"
NEURON_CORE: Final = "aws.amazon.com/neuroncore"
EFA: Final = "vpc.amazonaws.com/efa"
PRIVATE_IPV4_ADDRESS: Final = "vpc.amazonaws.com/PrivateIPv4Address"
"""Windows pods' IPs, handed out by the VPC resource controller from the primary interface."""


@dataclass(frozen=True, slots=True)
class CapacitySettings:
    """What shapes capacity besides the instance type: the operator flags and the NodeClass."""

    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
    reserved_enis: int = 0
    ami_family: str = "AL2023"
    kubelet: KubeletConfiguration | None = None
    # Root-volume size in bytes (from the NodeClass block devices); None means the default.
    root_volume_bytes: int | None = None
    instance_store_policy: str | None = None
    network_interfaces: tuple[tuple[int, int, str], ...] | None = None
    """`spec.networkInterfaces` as (network card, device index, interface type), or None."""
    connection_tracking: bool = False
    """`spec.connectionTracking` is set: only Nitro types can take it."""

    @property
    def efa_only_on_default_card(self) -> int:
        """EFA-only interfaces on card 0: each takes an ENI the VPC CNI cannot use for pods."""
        return sum(
            1 for card, _, kind in self.network_interfaces or () if card == 0 and kind == "efa-only"
        )


def is_arm64(info: Mapping[str, Any]) -> bool:
    archs = info.get("ProcessorInfo", {}).get("SupportedArchitectures") or []
    return bool(archs) and archs[0] == "arm64"


def memory_mib(info: Mapping[str, Any], vm_memory_overhead_percent: float) -> int:
    """Usable memory in MiB: arm64 loses 64Mi to CMA, then the VM overhead is taken off."""
    mib = int(info["MemoryInfo"]["SizeInMiB"])
    if is_arm64(info):
        mib -= 64
    return mib - math.ceil(mib * vm_memory_overhead_percent)


def _default_card(info: Mapping[str, Any]) -> Mapping[str, Any] | None:
    network = info.get("NetworkInfo") or {}
    index = network.get("DefaultNetworkCardIndex", 0)
    for card in network.get("NetworkCards") or ():
        if card.get("NetworkCardIndex") == index:
            return card  # type: ignore[no-any-return]
    return None


def eni_limited_pods(info: Mapping[str, Any], reserved_enis: int = 0, efa_only: int = 0) -> int:
    """`ENIs x (IPv4 per ENI - 1) + 2` over the default network card's ENIs less the reserved
    ones and the `efa_only` interfaces there (they carry no IP); 0 when no usable ENI is
    left."""
    network = info.get("NetworkInfo") or {}
    card = _default_card(info)
    enis = int((card or network).get("MaximumNetworkInterfaces") or 0)
    usable = enis - reserved_enis - efa_only
    if usable <= 0:
        return 0
    ips = int(network.get("Ipv4AddressesPerInterface") or 0)
    return usable * (ips - 1) + 2


def max_pods(info: Mapping[str, Any], settings: CapacitySettings) -> int:
    """The kubelet's pod limit: maxPods, else the ENI limit (110 on Windows), capped by
    podsPerCore where the family honours it."""
    kubelet = settings.kubelet
    if kubelet is not None and kubelet.max_pods is not None:
        count = int(kubelet.max_pods)
    elif settings.ami_family in ENI_LIMITED_FAMILIES:
        count = eni_limited_pods(info, settings.reserved_enis, settings.efa_only_on_default_card)
    else:
        count = DEFAULT_PODS
    per_core = kubelet.pods_per_core if kubelet is not None else None
    if per_core and settings.ami_family not in NO_PODS_PER_CORE_FAMILIES:
        count = min(count, int(per_core) * int(info["VCpuInfo"]["DefaultVCpus"]))
    return count


def ephemeral_storage(info: Mapping[str, Any], settings: CapacitySettings) -> int:
    """Bytes of node filesystem: the RAID0 instance store, else the root volume, else 20Gi."""
    if settings.instance_store_policy == "RAID0":
        total = (info.get("InstanceStorageInfo") or {}).get("TotalSizeInGB")
        if total:
            return int(total) * 10**9
    if settings.root_volume_bytes is not None:
        return settings.root_volume_bytes
    return DEFAULT_EPHEMERAL_STORAGE


def extended_resources(
    info: Mapping[str, Any],
    network_interfaces: tuple[tuple[int, int, str], ...] | None = None,
) -> ResourceMap:
    """GPUs by manufacturer, Neuron devices and cores, and EFA interfaces: the type's, or with
    `network_interfaces` (the class lays them out) the EFA-only ones listed, as Karpenter
    counts them."""
    out: ResourceMap = {}
    for gpu in (info.get("GpuInfo") or {}).get("Gpus") or ():
        resource = GPU_RESOURCES.get(str(gpu.get("Manufacturer", "")).lower())
        if resource:
            out[resource] = out.get(resource, 0) + int(gpu.get("Count") or 0)
    for device in (info.get("NeuronInfo") or {}).get("NeuronDevices") or ():
        count = int(device.get("Count") or 0)
        out[NEURON] = out.get(NEURON, 0) + count
        cores = int((device.get("CoreInfo") or {}).get("Count") or 0)
        out[NEURON_CORE] = out.get(NEURON_CORE, 0) + count * cores
    efa = ((info.get("NetworkInfo") or {}).get("EfaInfo") or {}).get("MaximumEfaInterfaces")
    if network_interfaces is not None:
        efa = sum(1 for _, _, kind in network_interfaces if kind == "efa-only")
    if efa:
        out[EFA] = int(efa)
    return out


def capacity(info: Mapping[str, Any], settings: CapacitySettings) -> ResourceMap:
    """The node's capacity as the kubelet will report it."""
    out: ResourceMap = {
        CPU: int(info["VCpuInfo"]["DefaultVCpus"]) * 1000,
        MEMORY: memory_mib(info, settings.vm_memory_overhead_percent) * MIB,
        EPHEMERAL_STORAGE: ephemeral_storage(info, settings),
        PODS: max_pods(info, settings),
    }
    out.update(extended_resources(info, settings.network_interfaces))
    if settings.ami_family.startswith("Windows"):
        # Karpenter's rule (the VPC resource controller's): the primary interface's IPv4
        # addresses less its own.
        per_interface = int((info.get("NetworkInfo") or {}).get("Ipv4AddressesPerInterface") or 0)
        out[PRIVATE_IPV4_ADDRESS] = max(per_interface - 1, 0)
    return out


def kube_reserved_cpu(millicores: int) -> int:
    """Millicores kept for the kubelet and runtime, band by band, each band truncated."""
    total = 0
    for start, end, fraction in _CPU_BANDS:
        if millicores >= start:
            span = min(millicores, end) - start
            total += int(span * fraction)
    return total


def kube_reserved(
    cpu_millicores: int, pods: int, *, kube_reserved_override: Mapping[str, str] | None = None
) -> ResourceMap:
    """Karpenter's kube-reserved: CPU bands, `11 x pods + 255Mi` and 1Gi of storage; the user's
    kubeReserved keys win."""
    out: ResourceMap = {
        CPU: kube_reserved_cpu(cpu_millicores),
        MEMORY: (11 * pods + 255) * MIB,
        EPHEMERAL_STORAGE: GIB,
    }
    out.update(_parse_reserved(kube_reserved_override, "kubeReserved"))
    return out


def _parse_reserved(raw: Mapping[str, str] | None, field: str) -> ResourceMap:
    out: ResourceMap = {}
    for name, amount in (raw or {}).items():
        if name == "pid":
            continue
        out[name] = milli_value(amount) if name == CPU else value(amount)
        if out[name] < 0:
            raise ValueError(f"kubelet.{field}.{name}: must not be negative")
    return out


def _threshold(raw: str | None, capacity_bytes: int, default: int) -> int:
    if raw is None:
        return default
    if raw.endswith("%"):
        fraction = float(raw[:-1]) / 100
        return 0 if fraction >= 1 else math.ceil(capacity_bytes * fraction)
    return value(raw)


def eviction_threshold(
    memory_bytes: int, storage_bytes: int, eviction_hard: Mapping[str, str] | None = None
) -> ResourceMap:
    """Hard eviction: 100Mi of memory and 10% of storage unless evictionHard says otherwise
    (a percentage is of capacity, and 100% means none)."""
    hard = eviction_hard or {}
    return {
        MEMORY: _threshold(hard.get("memory.available"), memory_bytes, EVICTION_MEMORY),
        EPHEMERAL_STORAGE: _threshold(
            hard.get("nodefs.available"),
            storage_bytes,
            math.ceil(storage_bytes * EVICTION_STORAGE_FRACTION),
        ),
    }


def overhead(
    info: Mapping[str, Any], cap: Mapping[str, int], settings: CapacitySettings
) -> ResourceMap:
    """kube-reserved + system-reserved + eviction threshold for a node of this type."""
    kubelet = settings.kubelet
    if settings.ami_family in ENI_LIMITED_MEMORY_OVERHEAD_FAMILIES:
        pods = eni_limited_pods(info, 0, settings.efa_only_on_default_card)
    else:
        pods = cap[PODS]
    reserved = kube_reserved(
        cap[CPU], pods, kube_reserved_override=kubelet.kube_reserved if kubelet else None
    )
    system = _parse_reserved(kubelet.system_reserved if kubelet else None, "systemReserved")
    eviction = eviction_threshold(
        cap[MEMORY], cap[EPHEMERAL_STORAGE], kubelet.eviction_hard if kubelet else None
    )
    out: ResourceMap = {}
    for part in (reserved, system, eviction):
        for name, amount in part.items():
            out[name] = out.get(name, 0) + amount
    return out


def _ephemeral_device(family: str) -> str:
    """The device that holds the kubelet's root directory in each family's default layout."""
    if family.startswith("Windows"):
        return "/dev/sda1"
    return "/dev/xvdb" if family == "Bottlerocket" else "/dev/xvda"


def capacity_settings_for(
    spec: EC2NodeClassSpec,
    *,
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    reserved_enis: int = 0,
) -> CapacitySettings:
    """The capacity inputs an EC2NodeClass sets: AMI family, kubelet, root volume, RAID0."""
    family = spec.resolved_ami_family()
    mappings = [m for m in spec.block_device_mappings or () if m.ebs and m.ebs.volume_size]
    chosen = next((m for m in mappings if m.root_volume), None)
    if chosen is None and family == "Custom" and mappings:
        chosen = mappings[-1]
    if chosen is None:
        device = _ephemeral_device(family)
        chosen = next((m for m in mappings if m.device_name == device), None)
    root = (
        value(chosen.ebs.volume_size) if chosen and chosen.ebs and chosen.ebs.volume_size else None
    )
    return CapacitySettings(
        vm_memory_overhead_percent=vm_memory_overhead_percent,
        reserved_enis=reserved_enis,
        ami_family=family,
        kubelet=spec.kubelet,
        root_volume_bytes=root,
        instance_store_policy=spec.instance_store_policy,
        network_interfaces=(
            tuple(
                (n.network_card_index, n.device_index, n.interface_type)
                for n in spec.network_interfaces
            )
            if spec.network_interfaces is not None
            else None
        ),
        connection_tracking=spec.connection_tracking is not None,
    )
