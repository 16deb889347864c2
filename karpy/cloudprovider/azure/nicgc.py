"""`networkinterface.garbagecollection`: NICs karpy made that no VM and no NodeClaim use.

A launch creates the NIC first, then the VM. A crash between the two, followed by the
NodeClaim's deletion, leaves a NIC that nothing will ever delete (leaked VMs themselves are
collected by the core `instance.garbagecollection` through the provider's `list`; their NIC goes
with them). Every five minutes each NIC in the node resource group that carries this cluster's
tag, has no VM of its name, whose NodeClaim (its `karpenter.sh_nodeclaim` tag) does not exist,
and that was first seen at least `min_age` ago, is deleted.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import structlog
from azure.core.exceptions import ResourceNotFoundError

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.descriptors import NODECLAIMS
from karpy.kube import Client, Clock, Result
from karpy.kube.builder import Builder, singleton

__all__ = ["INTERVAL", "NICGarbageCollection"]

log = structlog.get_logger("karpy.cloudprovider.azure.gc")

INTERVAL: Final = 300.0
MIN_AGE: Final = 60.0


def _tags(nic: Any) -> dict[str, str]:
    return dict(getattr(nic, "tags", None) or {})


class NICGarbageCollection:
    """Deletes orphaned NICs; a leader-only singleton loop."""

    name: Final = "networkinterface.garbagecollection"

    def __init__(
        self,
        *,
        client: Client,
        network: Any,
        compute: Any,
        resource_group: str,
        cluster_name: str,
        clock: Clock,
        interval: float = INTERVAL,
        min_age: float = MIN_AGE,
    ) -> None:
        self.client = client
        self.network = network
        self.compute = compute
        self.resource_group = resource_group
        self.cluster_name = cluster_name
        self.clock = clock
        self.interval = interval
        self.min_age = min_age
        self._first_seen: dict[str, float] = {}

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    async def reconcile(self, _key: str) -> Result:
        nics = [
            nic
            async for nic in self.network.network_interfaces.list(self.resource_group)
            if _tags(nic).get(azure.TAG_CLUSTER) == self.cluster_name
        ]
        vms = {
            str(vm.name).lower()
            async for vm in self.compute.virtual_machines.list(self.resource_group)
        }
        claims = {
            str((c.get("metadata") or {}).get("name") or "")
            for c in (await self.client.list(NODECLAIMS)).items
        }
        now = self.clock.now()
        seen: dict[str, float] = {}
        for nic in nics:
            name = str(nic.name)
            seen[name] = self._first_seen.get(name, now)
            if name.lower() in vms or _tags(nic).get(azure.TAG_NODECLAIM, "") in claims:
                continue
            if now - seen[name] < self.min_age:
                continue
            with contextlib.suppress(ResourceNotFoundError):
                poller = await self.network.network_interfaces.begin_delete(
                    self.resource_group, name
                )
                await poller.result()
            log.info("garbage collected network interface", nic=name)
        self._first_seen = seen
        return Result(requeue_after=self.interval)
