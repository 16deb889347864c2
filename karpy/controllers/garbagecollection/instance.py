"""`instance.garbagecollection`: instances karpy launched that no NodeClaim owns any more.

A crash between a launch and the NodeClaim's status write, or a NodeClaim whose finalizer was
stripped by hand, can leave an instance running that nothing will ever terminate. Every two
minutes, each instance from `cloudProvider.list()` that is not terminating, is older than
30 seconds (a fresh launch's NodeClaim may not show its providerID yet) and matches no NodeClaim
— neither by providerID nor by the NodeClaim name the provider reports it was launched for — is
deleted through the provider, together with its Node.

An instance the provider reports without a launch time is aged from when this process first
saw it, so it is still collected, 30 seconds later.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import structlog

from karpy.apis.objects import meta
from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.types import CloudProvider, NodeClaimNotFoundError
from karpy.controllers.common.objects import NODECLAIMS, delete_exactly
from karpy.kube import (
    INDEX_PROVIDER_ID,
    NODES,
    Client,
    Clock,
    Informer,
    Result,
)
from karpy.kube.builder import Builder, singleton

__all__ = ["InstanceGarbageCollection"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.garbagecollection")

INTERVAL: Final = 120.0
MIN_AGE: Final = timedelta(seconds=30)


class InstanceGarbageCollection:
    """Terminates instances without a NodeClaim; a leader-only singleton loop."""

    name: Final = "instance.garbagecollection"

    def __init__(
        self,
        *,
        client: Client,
        nodes: Informer,
        cloud_provider: CloudProvider,
        clock: Clock,
        interval: float = INTERVAL,
        min_age: timedelta = MIN_AGE,
    ) -> None:
        self.client = client
        self.nodes = nodes
        self.cloud_provider = cloud_provider
        self.clock = clock
        self.interval = interval
        self.min_age = min_age
        self._first_seen: dict[str, datetime] = {}

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    async def reconcile(self, _key: str) -> Result:
        instances = await self.cloud_provider.list()
        claims = (await self.client.list(NODECLAIMS)).items
        owned_ids = {str((c.get("status") or {}).get("providerID") or "") for c in claims}
        owned_names = {str(meta(c).get("name") or "") for c in claims}
        now = self.clock.wall()
        seen: dict[str, datetime] = {}
        for instance in instances:
            provider_id = instance.status.provider_id if instance.status else None
            if not provider_id:
                continue
            seen[provider_id] = self._first_seen.get(provider_id, now)
            if (
                provider_id in owned_ids
                or (instance.metadata.name or "") in owned_names
                or instance.metadata.deletion_timestamp is not None
            ):
                continue
            born = instance.metadata.creation_timestamp or seen[provider_id]
            if born.tzinfo is None:
                born = born.replace(tzinfo=UTC)
            if now - born < self.min_age:
                continue
            await self._collect(instance, provider_id)
        self._first_seen = seen
        return Result(requeue_after=self.interval)

    async def _collect(self, instance: NodeClaim, provider_id: str) -> None:
        with contextlib.suppress(NodeClaimNotFoundError):
            await self.cloud_provider.delete(instance)
        for node in self.nodes.by_index(INDEX_PROVIDER_ID, provider_id):
            await delete_exactly(self.client, resource=NODES, obj=node)
        log.info("garbage collected cloudprovider instance", **{"provider-id": provider_id})
