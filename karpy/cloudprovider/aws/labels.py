"""The labels an EC2 instance type gives its nodes, as Karpenter's AWS provider derives them
from `DescribeInstanceTypes` (reference §2.3). Labels that do not apply to a type are
`DoesNotExist` requirements, so `instance-gpu-count Exists` excludes types without GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.v1.labels import LABEL_ARCH, LABEL_OS, LABEL_TOPOLOGY_REGION
from karpy.scheduling.requirements import Requirement

__all__ = ["ARCHITECTURES", "architecture", "instance_type_labels", "requirements"]

# EC2 architecture names to Kubernetes' (others are not offered).
ARCHITECTURES: Final = {"x86_64": "amd64", "arm64": "arm64"}
_NAME: Final = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")
_KEBAB: Final = re.compile(r"[^a-z0-9]+")

# Every instance-type label that is either set or DoesNotExist.
OPTIONAL_LABELS: Final = (
    aws.LABEL_INSTANCE_CATEGORY,
    aws.LABEL_INSTANCE_GENERATION,
    aws.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
    aws.LABEL_INSTANCE_HYPERVISOR,
    aws.LABEL_INSTANCE_EBS_BANDWIDTH,
    aws.LABEL_INSTANCE_NETWORK_BANDWIDTH,
    aws.LABEL_INSTANCE_LOCAL_NVME,
    aws.LABEL_INSTANCE_GPU_NAME,
    aws.LABEL_INSTANCE_GPU_MANUFACTURER,
    aws.LABEL_INSTANCE_GPU_COUNT,
    aws.LABEL_INSTANCE_GPU_MEMORY,
    aws.LABEL_INSTANCE_ACCELERATOR_NAME,
    aws.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
    aws.LABEL_INSTANCE_ACCELERATOR_COUNT,
)


def kebab(text: str) -> str:
    """`Advanced Micro Devices` -> `advanced-micro-devices`, `AWS` -> `aws`."""
    return _KEBAB.sub("-", text.lower()).strip("-")


def architecture(info: Mapping[str, Any]) -> str | None:
    """The Kubernetes architecture of a type (its first EC2 architecture), None if unsupported."""
    archs = (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []
    for arch in archs:
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    return None


def instance_type_labels(info: Mapping[str, Any]) -> dict[str, str]:
    """The `karpenter.k8s.aws/instance-*` labels that apply to this type."""
    name = str(info["InstanceType"])
    family, _, size = name.partition(".")
    out: dict[str, str] = {
        aws.LABEL_INSTANCE_FAMILY: family,
        aws.LABEL_INSTANCE_SIZE: size,
        aws.LABEL_INSTANCE_CAPABILITY_FLEX: "true" if "-flex" in family else "false",
        aws.LABEL_INSTANCE_CPU: str(info["VCpuInfo"]["DefaultVCpus"]),
        aws.LABEL_INSTANCE_MEMORY: str(info["MemoryInfo"]["SizeInMiB"]),
        aws.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: str(
            bool((info.get("NetworkInfo") or {}).get("EncryptionInTransitSupported"))
        ).lower(),
    }
    match = _NAME.match(name)
    if match:
        out[aws.LABEL_INSTANCE_CATEGORY] = match.group(1)
        out[aws.LABEL_INSTANCE_GENERATION] = match.group(3)
    processor = info.get("ProcessorInfo") or {}
    if processor.get("Manufacturer"):
        out[aws.LABEL_INSTANCE_CPU_MANUFACTURER] = kebab(str(processor["Manufacturer"]))
    if processor.get("SustainedClockSpeedInGhz"):
        ghz = float(processor["SustainedClockSpeedInGhz"])
        out[aws.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ] = str(round(ghz * 1000))
    if info.get("Hypervisor"):
        out[aws.LABEL_INSTANCE_HYPERVISOR] = str(info["Hypervisor"])
    ebs = info.get("EbsInfo") or {}
    ebs_max = (ebs.get("EbsOptimizedInfo") or {}).get("MaximumBandwidthInMbps")
    if ebs.get("EbsOptimizedSupport") == "default" and ebs_max:
        out[aws.LABEL_INSTANCE_EBS_BANDWIDTH] = str(ebs_max)
    bandwidth = network_bandwidth_mbps(info)
    if bandwidth:
        out[aws.LABEL_INSTANCE_NETWORK_BANDWIDTH] = str(bandwidth)
    storage = info.get("InstanceStorageInfo") or {}
    if storage.get("NvmeSupport") in ("required", "supported") and storage.get("TotalSizeInGB"):
        out[aws.LABEL_INSTANCE_LOCAL_NVME] = str(storage["TotalSizeInGB"])
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    if len(gpus) == 1:
        gpu = gpus[0]
        out[aws.LABEL_INSTANCE_GPU_NAME] = kebab(str(gpu.get("Name", "")))
        out[aws.LABEL_INSTANCE_GPU_MANUFACTURER] = kebab(str(gpu.get("Manufacturer", "")))
        out[aws.LABEL_INSTANCE_GPU_COUNT] = str(gpu.get("Count", 0))
        out[aws.LABEL_INSTANCE_GPU_MEMORY] = str((gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0))
    out.update(_accelerator_labels(info))
    return out


def _accelerator_labels(info: Mapping[str, Any]) -> dict[str, str]:
    neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    if len(neuron) == 1:
        device = neuron[0]
        return {
            aws.LABEL_INSTANCE_ACCELERATOR_NAME: kebab(str(device.get("Name", ""))),
            aws.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER: "aws",
            aws.LABEL_INSTANCE_ACCELERATOR_COUNT: str(device.get("Count", 0)),
        }
    accelerators = (info.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or []
    if len(accelerators) == 1:
        acc = accelerators[0]
        return {
            aws.LABEL_INSTANCE_ACCELERATOR_NAME: kebab(str(acc.get("Name", ""))),
            aws.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER: kebab(str(acc.get("Manufacturer", ""))),
            aws.LABEL_INSTANCE_ACCELERATOR_COUNT: str(acc.get("Count", 0)),
        }
    return {}


def network_bandwidth_mbps(info: Mapping[str, Any]) -> int | None:
    """Baseline network bandwidth in Mbps over all network cards, where EC2 reports it.

    Karpenter reads a table generated from the EC2 documentation; the same baseline figures
    are in `NetworkCards[].BaselineBandwidthInGbps` (m5.large: 0.75 Gbps -> 750)."""
    cards = (info.get("NetworkInfo") or {}).get("NetworkCards") or []
    total = sum(float(c.get("BaselineBandwidthInGbps") or 0) for c in cards)
    return round(total * 1000) if total > 0 else None


def requirements(
    info: Mapping[str, Any],
    *,
    os_name: str = "linux",
    region: str | None = None,
    zone_ids: Iterable[str] = (),
) -> list[Requirement]:
    """Requirements for every label of the type except instance type, zone and capacity type
    (which `InstanceType` derives from its offerings)."""
    values = instance_type_labels(info)
    out = [
        Requirement(LABEL_OS, complement=False, values=(os_name,)),
        Requirement(aws.LABEL_INSTANCE_TENANCY, complement=False, values=("default",)),
    ]
    arch = architecture(info)
    if arch is not None:
        out.append(Requirement(LABEL_ARCH, complement=False, values=(arch,)))
    if region:
        out.append(Requirement(LABEL_TOPOLOGY_REGION, complement=False, values=(region,)))
    ids = sorted(set(zone_ids))
    if ids:
        out.append(Requirement(aws.LABEL_TOPOLOGY_ZONE_ID, complement=False, values=ids))
    for key, text in values.items():
        out.append(Requirement(key, complement=False, values=(text,)))
    for key in OPTIONAL_LABELS:
        if key not in values:
            out.append(Requirement(key, complement=False, values=()))
    return out
