"""Azure SKUs as the scheduler's instance types: requirements (the SKU labels, architecture, OS,
region), capacity and overhead (`skus.node_resources`), and one offering per zone and capacity
type, priced from a price table.

Zones are named as AKS labels nodes, `<region>-<zone>` (`westus2-1`); a SKU without zones in the
region is offered once, with an empty zone and `placement-scope: regional`. Spot is offered only
where the SKU is `LowPriorityCapable`; zones restricted for the subscription are offered as
unavailable, and a SKU restricted in the whole location is not offered at all.
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
from karpy.cloudprovider.azure.skus import Sku, node_resources, sku_labels
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

__all__ = ["NO_PRICE", "instance_type", "zone_label"]

NO_PRICE: Final = float("inf")
"""The price of an offering missing from the price table: never the cheapest."""

PriceTable = Mapping[tuple[str, str], float]
"""(SKU name, capacity type) -> price per hour."""


def zone_label(region: str, zone: str) -> str:
    """The `topology.kubernetes.io/zone` value of an Azure zone (`westus2`, `1` -> `westus2-1`)."""
    return f"{region.lower()}-{zone}" if zone else ""


def instance_type(
    sku: Sku,
    *,
    region: str,
    prices: PriceTable,
    pods: int,
    os_disk_size_gb: int = 128,
    vm_memory_overhead_percent: float = 0.075,
) -> InstanceType | None:
    """The instance type of `sku` in `region`; None when the subscription may not use it."""
    if sku.restricted_in_location or sku.vcpus <= 0 or int(sku.memory_gib) <= 0:
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
        Requirement(azure.LABEL_PLACEMENT_SCOPE, complement=False, values=(scope,))
    )
    return InstanceType(
        name=sku.name,
        capacity={
            CPU: node.cpu_milli,
            MEMORY: node.memory,
            EPHEMERAL_STORAGE: node.ephemeral_storage,
            PODS: node.pods,
        },
        overhead={
            CPU: node.kube_reserved_cpu_milli,
            MEMORY: node.kube_reserved_memory + node.eviction_memory,
        },
        offerings=offerings,
        requirements=requirements,
    )
