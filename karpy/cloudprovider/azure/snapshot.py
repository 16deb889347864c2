"""The Azure snapshot shipped with karpy (`data/snapshot.json`, by `hack/azure/snapshot.py`):
Resource SKU records of common VM sizes and their retail prices in a few regions.

`karpy simulate --instance-types azure[:REGION]` plans on these SKUs; `PROVIDER=azure` starts
from these prices (the region's, or `DEFAULT_REGION`'s as a stand-in) until the Retail Prices API
answers, and keeps them while it cannot be reached. Where the snapshot has no spot price, spot
offerings carry the on-demand price, as the AWS snapshot's do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any, Final

from karpy.apis.v1.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT
from karpy.cloudprovider.azure.instancetypes import instance_type
from karpy.cloudprovider.azure.skus import max_pods, parse_sku
from karpy.scheduling.catalog import CatalogError
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.resources import EPHEMERAL_STORAGE, PODS

__all__ = [
    "DEFAULT_REGION",
    "load_snapshot",
    "parse_instance_types_argument",
    "sized_for_nodeclass",
    "snapshot_info",
    "snapshot_prices",
    "snapshot_regions",
]

DEFAULT_REGION: Final = "eastus"


@cache
def _snapshot() -> Mapping[str, Any]:
    text = resources.files("karpy.cloudprovider.azure").joinpath("data/snapshot.json").read_text()
    data: Mapping[str, Any] = json.loads(text)
    return data


def snapshot_regions() -> list[str]:
    return sorted(_snapshot()["regions"])


def snapshot_info() -> dict[str, str]:
    """Where the snapshot's prices come from and their date."""
    data = _snapshot()
    return {"pricesFrom": str(data["pricesFrom"]), "pricesAsOf": str(data["pricesAsOf"])}


def snapshot_prices(region: str) -> dict[tuple[str, str], float]:
    """(SKU, capacity type) -> price per hour in `region` (spot falls back to on-demand); empty
    for a region the snapshot lacks."""
    table: dict[tuple[str, str], float] = {}
    for key, price in (_snapshot()["prices"].get(region.lower()) or {}).items():
        sku, _, capacity_type = key.partition("|")
        table[(sku, capacity_type)] = float(price)
    for (sku, capacity_type), price in list(table.items()):
        if capacity_type == CAPACITY_TYPE_ON_DEMAND:
            table.setdefault((sku, CAPACITY_TYPE_SPOT), price)
    return table


def parse_instance_types_argument(value: str) -> str | None:
    """The region named by `azure` / `azure:REGION`, or None when `value` is something else."""
    if value == "azure":
        return DEFAULT_REGION
    if value.startswith("azure:"):
        return value.removeprefix("azure:").lower()
    return None


def load_snapshot(
    region: str = DEFAULT_REGION,
    *,
    network_plugin: str = "azure",
    network_plugin_mode: str = "overlay",
    max_pods_override: int | None = None,
    os_disk_size_gb: int = 128,
) -> list[InstanceType]:
    """The snapshot's SKUs in `region` as instance types, priced; `CatalogError` names the
    shipped regions when `region` is not one."""
    if region not in _snapshot()["regions"]:
        raise CatalogError(
            f"--instance-types azure:{region}: no Azure snapshot for region {region!r}; "
            f"shipped: {', '.join(snapshot_regions())}"
        )
    prices = snapshot_prices(region)
    pods = max_pods(
        network_plugin=network_plugin,
        network_plugin_mode=network_plugin_mode,
        override=max_pods_override,
    )
    out: list[InstanceType] = []
    for record in _snapshot()["skus"]:
        sku = parse_sku(record, location=region)
        if sku is None or (sku.name, CAPACITY_TYPE_ON_DEMAND) not in prices:
            continue
        it = instance_type(
            sku, region=region, prices=prices, pods=pods, os_disk_size_gb=os_disk_size_gb
        )
        if it is not None:
            out.append(it)
    return out


def sized_for_nodeclass(
    types: Sequence[InstanceType], *, max_pods: int | None, os_disk_size_gb: int
) -> list[InstanceType]:
    """The catalogue's types as nodes of an AKSNodeClass: its `maxPods` (when set) as the pods
    capacity and its `osDiskSizeGB` as ephemeral storage, as the live provider sizes them. The
    AKS overhead depends on neither; offerings and requirements are the catalogue's."""
    storage = os_disk_size_gb * 10**9
    out: list[InstanceType] = []
    for t in types:
        capacity = dict(t.capacity)
        if max_pods is not None:
            capacity[PODS] = max_pods
        capacity[EPHEMERAL_STORAGE] = storage
        if capacity == t.capacity:
            out.append(t)
            continue
        out.append(
            InstanceType(
                name=t.name,
                capacity=capacity,
                offerings=t.offerings,
                requirements=t.requirements,
                overhead=t.overhead,
            )
        )
    return out
