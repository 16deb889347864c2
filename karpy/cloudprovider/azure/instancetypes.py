"""Azure SKUs as the scheduler's instance types: requirements (the SKU labels, architecture, OS,
region), capacity and overhead (`skus.node_resources`), and one offering per zone and capacity
type, priced from a price table.

Zones are named as AKS labels nodes, `<region>-<zone>` (`westus2-1`); a SKU without zones in the
region is offered once, with an empty zone and `placement-scope: regional`. Spot is offered only
where the SKU is `LowPriorityCapable`; zones restricted for the subscription are offered as
unavailable, and a SKU restricted in the whole location is not offered at all.

GPU sizes (upstream's rules, `karpy.cloudprovider.azure.gpu`): a size with GPUs that AKS installs
no drivers on is not offered, nor a driver size with an image family whose images do not take its
drivers (only Ubuntu, and Azure Linux for some). An NVIDIA size offers its GPUs as
`nvidia.com/gpu` capacity. `sku-gpu-manufacturer` and `sku-gpu-name` are `DoesNotExist` on the
sizes that do not carry them, so a NodePool asking for `sku-gpu-manufacturer In [nvidia]` gets
only NVIDIA sizes. With the AKSNodeClass's `gpu.mode: None` (drivers managed elsewhere, such as
by a GPU operator) karpy refuses no GPU size.

`karpenter.azure.com/sku-hyperv-generation` is `In` the Hyper-V generations the SKU's
`HyperVGenerations` capability lists (`1`, `2` or both), `DoesNotExist` without the capability, as
upstream's `setRequirementsHyperVGeneration` sets it. It picks the node image (`imagefamily`: a
size that boots only generation 1 gets the generation 1 image). Upstream restricts the label: no
NodePool, NodeOverlay or pod may constrain it (`karpy.apis.provider_labels`), but like every
single-valued requirement of the instance type it is among the node's labels, so a size that
boots one generation only labels its nodes with it and a size that boots both does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.v1.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    LABEL_ARCH,
    LABEL_OS,
    LABEL_TOPOLOGY_REGION,
)
from karpy.cloudprovider.azure.gpu import (
    NVIDIA_GPU_RESOURCE,
    is_azure_linux_gpu_size,
    is_nvidia_size,
    supported_on_image_family,
)
from karpy.cloudprovider.azure.skus import Sku, node_resources, nvidia_gpus, sku_labels
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

__all__ = ["NO_PRICE", "instance_type", "offered", "zone_label"]

NO_PRICE: Final = float("inf")
"""The price of an offering missing from the price table: never the cheapest."""

PriceTable = Mapping[tuple[str, str], float]
"""(SKU name, capacity type) -> price per hour."""


def zone_label(region: str, zone: str) -> str:
    """The `topology.kubernetes.io/zone` value of an Azure zone (`westus2`, `1` -> `westus2-1`)."""
    return f"{region.lower()}-{zone}" if zone else ""


_GPU_KEYS: Final = (azure.LABEL_SKU_GPU_MANUFACTURER, azure.LABEL_SKU_GPU_NAME)
"""GPU labels a size without them answers with `DoesNotExist`."""


def offered(sku: Sku, *, image_family: str = "Ubuntu", install_gpu_drivers: bool = True) -> bool:
    """Whether karpy offers the size at all: not restricted in the location, with CPUs and
    memory, and, when it installs GPU drivers, a GPU size it can install drivers on for the
    image family (upstream leaves the others out)."""
    if sku.restricted_in_location or sku.vcpus <= 0 or int(sku.memory_gib) <= 0:
        return False
    if not install_gpu_drivers:
        return True
    driver_size = is_nvidia_size(sku.name) or is_azure_linux_gpu_size(sku.name)
    if sku.gpus > 0 and not driver_size:
        return False
    return supported_on_image_family(sku.name, image_family)


def instance_type(
    sku: Sku,
    *,
    region: str,
    prices: PriceTable,
    pods: int,
    os_disk_size_gb: int = 128,
    vm_memory_overhead_percent: float = 0.075,
    image_family: str = "Ubuntu",
    install_gpu_drivers: bool = True,
) -> InstanceType | None:
    """The instance type of `sku` in `region`; None when it is not offered (`offered`)."""
    if not offered(sku, image_family=image_family, install_gpu_drivers=install_gpu_drivers):
        return None
    node = node_resources(
        sku,
        vm_memory_overhead_percent=vm_memory_overhead_percent,
        os_disk_size_gb=os_disk_size_gb,
        pods=pods,
    )
    capacity_types = [CAPACITY_TYPE_ON_DEMAND]
    if sku.flag("LowPriorityCapable"):
        capacity_types.append(CAPACITY_TYPE_SPOT)
    offerings: list[Offering] = []
    zones = sku.zones or ("",)
    scope = azure.PLACEMENT_SCOPE_ZONAL if sku.zones else azure.PLACEMENT_SCOPE_REGIONAL
    placement = Requirements(
        [Requirement(azure.LABEL_PLACEMENT_SCOPE, complement=False, values=(scope,))]
    )
    for zone in zones:
        for capacity_type in capacity_types:
            offerings.append(
                Offering(
                    zone=zone_label(region, zone),
                    capacity_type=capacity_type,
                    price=prices.get((sku.name, capacity_type), NO_PRICE),
                    available=zone not in sku.restricted_zones,
                    requirements=placement,
                )
            )
    fixed = dict(sku_labels(sku))
    fixed[LABEL_ARCH] = sku.architecture
    fixed[LABEL_OS] = "linux"
    fixed[LABEL_TOPOLOGY_REGION] = region.lower()
    requirements = Requirements.from_labels(fixed).add(
        Requirement(azure.LABEL_PLACEMENT_SCOPE, complement=False, values=(scope,)),
        *(Requirement(k, complement=False, values=()) for k in _GPU_KEYS if k not in fixed),
        Requirement(
            azure.LABEL_SKU_HYPERV_GENERATION, complement=False, values=sku.hyperv_generations
        ),
    )
    capacity = {
        CPU: node.cpu_milli,
        MEMORY: node.memory,
        EPHEMERAL_STORAGE: node.ephemeral_storage,
        PODS: node.pods,
    }
    if gpus := nvidia_gpus(sku):
        capacity[NVIDIA_GPU_RESOURCE] = gpus
    return InstanceType(
        name=sku.name,
        capacity=capacity,
        overhead={
            CPU: node.kube_reserved_cpu_milli,
            MEMORY: node.kube_reserved_memory + node.eviction_memory,
        },
        offerings=offerings,
        requirements=requirements,
    )
