"""`nodepool.counter`: `status.resources` and `status.nodes` of each NodePool.

The totals come from cluster state (the capacity of every node of the NodePool, plus the
synthetic `nodes` resource), refreshed every 5 seconds and on NodePool changes. Nothing is
written until cluster state has synced, so a restart never publishes a lower count that a
limit check could trust.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from karpy.apis.descriptors import NODEPOOLS
from karpy.controllers.common.status import patch_status
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, format_resources

__all__ = ["BASE_RESOURCES", "NAME", "NODES", "NodePoolCounterController"]

NAME = "nodepool.counter"
NODES: Final = "nodes"
BASE_RESOURCES: Final[Mapping[str, int]] = {
    CPU: 0,
    MEMORY: 0,
    PODS: 0,
    EPHEMERAL_STORAGE: 0,
    NODES: 0,
}
PERIOD: Final = 5.0
UNSYNCED_RETRY: Final = 1.0

JSON = dict[str, Any]


class NodePoolCounterController:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodepools: Informer,
        resources_for: Callable[[str], Mapping[str, int]],
        synced: Callable[[], bool],
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodepools = nodepools
        self.resources_for = resources_for
        self.synced = synced
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools).workers(10).log_kind("NodePool")

    def desired(self, name: str) -> tuple[dict[str, str], int]:
        totals = {**BASE_RESOURCES, **self.resources_for(name)}
        return format_resources(totals), int(totals.get(NODES, 0))

    async def reconcile(self, name: str) -> Result | None:
        pool = self.nodepools.get(name)
        if pool is None:
            return None
        if not self.synced():
            return Result(requeue_after=UNSYNCED_RETRY)
        resources, nodes = self.desired(name)
        status = pool.get("status") or {}
        current = status.get("resources") or {}
        if current != resources or status.get("nodes") != nodes:
            patch: JSON = {
                "resources": {**dict.fromkeys(current), **resources},  # null drops stale keys
                "nodes": nodes,
            }
            if (
                await patch_status(
                    self.client, resource=NODEPOOLS, obj=pool, status=patch, optimistic_lock=False
                )
                is None
            ):
                return None
        return Result(requeue_after=PERIOD)
