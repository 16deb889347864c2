"""The Azure provider's instance types: the region's Resource SKUs, priced, with the offerings the
unavailable-offerings cache rules out marked unavailable, for one AKSNodeClass.

The SKU list is read once through the Resource SKUs API (`$filter=location eq '<region>'`) and
kept for `sku_ttl` (SKUs change rarely; upstream caches them for hours too). Instance types are
rebuilt only when something they depend on changes: the NodeClass's `maxPods`,
`osDiskSizeGB`, `imageFamily` and `gpu.mode` (which GPU sizes are offered), the price table
(`set_prices`) or the cache's `seq_num`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.azure.v1beta1.aksnodeclass import IMAGE_FAMILY_DEFAULT
from karpy.cloudprovider.azure.instancetypes import PriceTable, instance_type, zone_label
from karpy.cloudprovider.azure.skus import Sku, max_pods, parse_sku
from karpy.cloudprovider.azure.unavailable import AzureUnavailableOfferings
from karpy.scheduling.instancetypes import InstanceType

__all__ = ["DEFAULT_SKU_TTL", "AzureInstanceTypes", "installs_gpu_drivers", "sku_records"]

DEFAULT_SKU_TTL: Final = 3600.0


def _wire(model: Any) -> Mapping[str, Any]:
    if isinstance(model, Mapping):
        return model
    out: Mapping[str, Any] = model.serialize(keep_readonly=True)
    return out


async def sku_records(compute: Any, *, location: str) -> list[Mapping[str, Any]]:
    """Every Resource SKU record of `location`, in ARM's JSON form."""
    pages = compute.resource_skus.list(filter=f"location eq '{location}'")
    return [_wire(item) async for item in pages]


def installs_gpu_drivers(nodeclass: AKSNodeClass | None) -> bool:
    """Whether the class's GPU nodes get their drivers from AKS's provisioning (`gpu.mode`
    `Driver`, the default) rather than from elsewhere (`None`)."""
    gpu = nodeclass.spec.gpu if nodeclass is not None else None
    return gpu is None or gpu.mode != "None"


class AzureInstanceTypes:
    """Instance types of the cluster's region, per AKSNodeClass."""

    def __init__(
        self,
        *,
        compute: Any,
        location: str,
        unavailable: AzureUnavailableOfferings,
        prices: PriceTable | None = None,
        network_plugin: str = "azure",
        network_plugin_mode: str = "overlay",
        vm_memory_overhead_percent: float = 0.075,
        sku_ttl: float = DEFAULT_SKU_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._compute = compute
        self.location = location
        self.unavailable = unavailable
        self._prices: PriceTable = dict(prices or {})
        self._prices_version = 0
        self.network_plugin = network_plugin
        self.network_plugin_mode = network_plugin_mode
        self.vm_memory_overhead_percent = vm_memory_overhead_percent
        self._sku_ttl = sku_ttl
        self._clock = clock
        self._skus: dict[str, Sku] = {}
        self._skus_at = -float("inf")
        self._lock = asyncio.Lock()
        self._built: dict[tuple[Any, ...], list[InstanceType]] = {}

    @property
    def prices(self) -> PriceTable:
        return self._prices

    def set_prices(self, prices: PriceTable) -> None:
        """New prices reach the instance types built from now on."""
        self._prices = dict(prices)
        self._prices_version += 1
        self._built.clear()

    async def skus(self) -> dict[str, Sku]:
        """The region's VM SKUs by name, read again once `sku_ttl` has passed."""
        async with self._lock:
            if self._clock() - self._skus_at >= self._sku_ttl:
                records = await sku_records(self._compute, location=self.location)
                parsed = (parse_sku(r, location=self.location) for r in records)
                self._skus = {s.name: s for s in parsed if s is not None}
                self._skus_at = self._clock()
                self._built.clear()
            return self._skus

    def sku(self, name: str) -> Sku | None:
        """A SKU already read (None before the first read or for an unknown name)."""
        return self._skus.get(name)

    def pods(self, nodeclass: AKSNodeClass | None) -> int:
        override = nodeclass.spec.max_pods if nodeclass is not None else None
        return max_pods(
            network_plugin=self.network_plugin,
            network_plugin_mode=self.network_plugin_mode,
            override=override,
        )

    async def for_nodeclass(self, nodeclass: AKSNodeClass | None) -> list[InstanceType]:
        """The region's SKUs as instance types for `nodeclass` (None: the class's defaults)."""
        return await self._for(
            pods=self.pods(nodeclass),
            os_disk_size_gb=nodeclass.spec.os_disk_size_gb if nodeclass is not None else 128,
            image_family=(
                nodeclass.spec.image_family if nodeclass is not None else IMAGE_FAMILY_DEFAULT
            ),
            install_gpu_drivers=installs_gpu_drivers(nodeclass),
        )

    async def every_size(self) -> list[InstanceType]:
        """Every size of the region, none left out for its GPUs, sized as a default class's:
        what a VM of any class is read back with (its SKU's labels and capacity)."""
        return await self._for(
            pods=self.pods(None),
            os_disk_size_gb=128,
            image_family=IMAGE_FAMILY_DEFAULT,
            install_gpu_drivers=False,
        )

    async def _for(
        self, *, pods: int, os_disk_size_gb: int, image_family: str, install_gpu_drivers: bool
    ) -> list[InstanceType]:
        skus = await self.skus()
        key: tuple[Any, ...] = (pods, os_disk_size_gb, image_family, install_gpu_drivers)
        key += (self._prices_version, self.unavailable.seq_num, id(skus))
        built = self._built.get(key)
        if built is None:
            built = self._build(
                skus.values(),
                pods=pods,
                os_disk_size_gb=os_disk_size_gb,
                image_family=image_family,
                install_gpu_drivers=install_gpu_drivers,
            )
            if len(self._built) > 16:
                self._built.clear()
            self._built[key] = built
        return built

    def _build(
        self,
        skus: Any,
        *,
        pods: int,
        os_disk_size_gb: int,
        image_family: str,
        install_gpu_drivers: bool,
    ) -> list[InstanceType]:
        out: list[InstanceType] = []
        for sku in skus:
            it = instance_type(
                sku,
                region=self.location,
                prices=self._prices,
                pods=pods,
                os_disk_size_gb=os_disk_size_gb,
                vm_memory_overhead_percent=self.vm_memory_overhead_percent,
                image_family=image_family,
                install_gpu_drivers=install_gpu_drivers,
            )
            if it is None:
                continue
            for offering in it.offerings:
                if offering.available and self.unavailable.is_unavailable(
                    offering.capacity_type,
                    sku.name,
                    offering.zone,
                    family=sku.family,
                    vcpus=sku.vcpus,
                ):
                    offering.available = False
            out.append(it)
        return out

    def zones_of(self, sku: Sku) -> list[str]:
        """The offering zones (`westus2-1`; `""` for a regional SKU) of a SKU."""
        return [zone_label(self.location, z) for z in sku.zones] or [""]
