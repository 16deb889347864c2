"""`nodeclaim.garbagecollection`: NodeClaims whose instance the cloud no longer has.

Every two minutes, a registered NodeClaim that is not being deleted and whose providerID is
missing from `cloudProvider.list()` is deleted (its finalizer then cleans up), unless its Node is
still Ready: a Ready node means a kubelet is running, whatever the cloud API says. NodeClaims
that never registered are left to the registration timeout, so a slow cloud listing cannot
remove a NodeClaim that is still booting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog

from karpy.apis.objects import is_condition_true, is_deleting, is_node_ready, label, meta
from karpy.apis.v1 import conditions, labels
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.common.objects import NODECLAIMS, delete_exactly
from karpy.kube import (
    INDEX_PROVIDER_ID,
    Client,
    Clock,
    Informer,
    Result,
)
from karpy.kube.builder import Builder, singleton

__all__ = ["REASON_GARBAGE_COLLECTED", "NodeClaimGarbageCollection"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.garbagecollection")

INTERVAL: Final = 120.0
PARALLELISM: Final = 20
REASON_GARBAGE_COLLECTED: Final = "garbage_collected"

DisruptedHook = Callable[[Mapping[str, Any], str], None]


class NodeClaimGarbageCollection:
    """Deletes NodeClaims whose instance is gone; a leader-only singleton loop."""

    name: Final = "nodeclaim.garbagecollection"

    def __init__(
        self,
        *,
        client: Client,
        nodes: Informer,
        cloud_provider: CloudProvider,
        clock: Clock,
        interval: float = INTERVAL,
        on_disrupted: DisruptedHook | None = None,
    ) -> None:
        self.client = client
        self.nodes = nodes
        self.cloud_provider = cloud_provider
        self.clock = clock
        self.interval = interval
        self.on_disrupted = on_disrupted

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    async def reconcile(self, _key: str) -> Result:
        claims = (await self.client.list(NODECLAIMS)).items
        instances = await self.cloud_provider.list()
        live = {
            instance.status.provider_id
            for instance in instances
            if instance.status is not None
            and instance.status.provider_id
            and instance.metadata.deletion_timestamp is None
        }
        orphans = [
            claim
            for claim in claims
            if is_condition_true(claim, conditions.NODECLAIM_REGISTERED)
            and not is_deleting(claim)
            and _provider_id(claim) not in live
        ]
        limit = asyncio.Semaphore(PARALLELISM)

        async def collect(claim: JSON) -> None:
            async with limit:
                await self._collect(claim)

        await asyncio.gather(*(collect(claim) for claim in orphans))
        return Result(requeue_after=self.interval)

    async def _collect(self, claim: JSON) -> None:
        provider_id = _provider_id(claim)
        nodes = self.nodes.by_index(INDEX_PROVIDER_ID, provider_id) if provider_id else []
        if any(is_node_ready(node) for node in nodes):
            return
        if not await delete_exactly(self.client, resource=NODECLAIMS, obj=claim):
            return
        name = str(meta(claim).get("name"))
        log.info(
            "garbage collecting nodeclaim with no cloudprovider representation",
            NodeClaim={"name": name},
            NodePool={"name": label(claim, labels.LABEL_NODEPOOL)},
            **{"provider-id": provider_id},
        )
        if self.on_disrupted is not None:
            self.on_disrupted(claim, REASON_GARBAGE_COLLECTED)


def _provider_id(claim: Mapping[str, Any]) -> str:
    return str((claim.get("status") or {}).get("providerID") or "")
