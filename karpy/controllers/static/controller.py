"""`static.capacity`: keep a static NodePool (`spec.replicas`) at exactly `replicas` nodes.

Karpenter's `static.provisioning` and `static.deprovisioning` in one reconcile per NodePool:

- **up**: when the NodePool is Ready and has fewer NodeClaims than `replicas` (deleting ones
  count: a node is refilled once it is gone), launch the missing ones from the template
  (`claims.static_nodeclaim`), never beyond `limits.nodes`;
- **down**: when more NodeClaims are running than `replicas` (those a disruption command took
  do not count, so a drift replacement is not mistaken for a surplus), delete the surplus:
  unlaunched ones first, then empty nodes, then the least disruptive (no do-not-disrupt pod,
  higher `karpenter.sh/deprovisioning-priority` first, cheapest pods to move). The user asked
  for fewer nodes, so budgets do not apply; the drain still respects PDBs.

It waits for the NodeClaim cache to list, counts NodeClaims it just created before the watch
shows them (cluster state keeps them) and remembers what it just deleted, so no node is launched
or deleted twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import structlog

from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import is_condition_true, is_deleting
from karpy.apis.v1 import NodePool, conditions, labels
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.common.metrics import count_disrupted
from karpy.controllers.disruption.candidates import do_not_disrupt_active
from karpy.controllers.disruption.consolidation.candidates import eviction_cost
from karpy.controllers.provisioning.metrics import NODECLAIMS_CREATED
from karpy.controllers.provisioning.nodeclaims import nodeclaim_for
from karpy.controllers.static.claims import (
    NodeCounts,
    is_static,
    node_limit,
    nodepool_counts,
    replicas_of,
    static_nodeclaim,
)
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.kube.errors import KubeError, NotFoundError
from karpy.state import Cluster, StateNode

__all__ = ["ANNOTATION_DEPROVISIONING_PRIORITY", "NAME", "StaticCapacityController"]

NAME: Final = "static.capacity"
PERIOD: Final = 60.0
LIMITED_RETRY: Final = 30.0
UNSYNCED_RETRY: Final = 1.0
DELETED_MEMORY: Final = 120.0
ANNOTATION_DEPROVISIONING_PRIORITY: Final = "karpenter.sh/deprovisioning-priority"
REASON_OVERPROVISIONED: Final = "overprovisioned"

log = structlog.get_logger("karpy.controllers.static")

JSON = dict[str, Any]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _priority(claim: Mapping[str, Any]) -> int:
    raw = (_meta(claim).get("annotations") or {}).get(ANNOTATION_DEPROVISIONING_PRIORITY)
    try:
        return int(str(raw)) if raw is not None else 0
    except ValueError:
        return 0


class StaticCapacityController:
    """Scales each static NodePool to its `replicas`."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        cluster: Cluster,
        cloud_provider: CloudProvider,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.cloud_provider = cloud_provider
        self.clock = clock or RealClock()
        self.nodepools: Informer = cluster.nodepool_informer
        self.nodeclaims: Informer = cluster.nodeclaim_informer
        self._deleted: dict[str, float] = {}

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools, predicate=is_static).watches(
            self.nodeclaims, mapper=self._pool_of
        ).workers(10).log_kind("NodePool")

    def _pool_of(self, claim: JSON) -> str | None:
        name = (_meta(claim).get("labels") or {}).get(labels.LABEL_NODEPOOL)
        if name and is_static(self.nodepools.get(str(name))):
            return str(name)
        return None

    def _going(self) -> set[str]:
        """NodeClaims deleted lately by this controller, or taken by a disruption command."""
        now = self.clock.now()
        for name in [n for n, at in self._deleted.items() if now - at > DELETED_MEMORY]:
            del self._deleted[name]
        marked = {n.nodeclaim_name for n in self.cluster.nodes() if n.marked and n.nodeclaim_name}
        return set(self._deleted) | marked

    def counts(self, name: str) -> NodeCounts:
        return nodepool_counts(name, self.cluster.nodeclaims(), marked=self._going())

    async def reconcile(self, name: str) -> Result | None:
        pool = self.nodepools.get(name)
        if pool is None or not is_static(pool) or is_deleting(pool):
            return None
        if not self.nodeclaims.has_synced():
            return Result(requeue_after=UNSYNCED_RETRY)
        counts = self.counts(name)
        replicas = replicas_of(pool)
        if counts.total < replicas:
            return await self._scale_up(pool, counts, replicas)
        surplus = len(counts.running) - replicas
        if surplus > 0:
            await self._scale_down(pool, counts.running, surplus)
        return Result(requeue_after=PERIOD)

    # -- up ---------------------------------------------------------------------------------------

    async def _scale_up(self, pool: JSON, counts: NodeCounts, replicas: int) -> Result | None:
        name = str(_meta(pool).get("name") or "")
        if not is_condition_true(pool, conditions.CONDITION_READY):
            return None  # the NodePool's update to Ready wakes us
        wanted = replicas - counts.total
        limit = node_limit(pool)
        if limit is not None:
            wanted = min(wanted, limit - counts.total)
        if wanted <= 0:
            log.info("nodepool node limit reached", NodePool={"name": name}, limit=limit)
            return Result(requeue_after=LIMITED_RETRY)
        try:
            types = await self.cloud_provider.get_instance_types(NodePool.model_validate(pool))
        except Exception as err:  # a broken NodePool or provider error: look again later
            log.error("failed to resolve instance types", NodePool={"name": name}, error=str(err))
            return Result(requeue_after=LIMITED_RETRY)
        claim = static_nodeclaim(pool, types)
        if claim is None:
            log.error(
                "no instance type satisfies the static nodepool's requirements",
                NodePool={"name": name},
            )
            return Result(requeue_after=LIMITED_RETRY)
        log.info(
            "provisioning nodeclaims to satisfy replica count",
            NodePool={"name": name},
            current=counts.total,
            desired=replicas,
            count=wanted,
        )
        for _ in range(wanted):
            body = nodeclaim_for(claim, pool)
            try:
                created = await self.client.create(NODECLAIMS, body)
            except KubeError as err:
                log.error("failed launching nodeclaim", NodePool={"name": name}, error=str(err))
                return Result(requeue=True)
            self.cluster.update_nodeclaim(created)
            NODECLAIMS_CREATED.labels("provisioning", name, "false").inc()
            log.info(
                "created nodeclaim",
                NodePool={"name": name},
                NodeClaim={"name": _meta(created).get("name")},
            )
        return Result(requeue_after=PERIOD)

    # -- down -------------------------------------------------------------------------------------

    async def _scale_down(self, pool: JSON, running: Sequence[str], surplus: int) -> None:
        name = str(_meta(pool).get("name") or "")
        chosen = self.surplus_order(running)[:surplus]
        log.info(
            "deprovisioning nodeclaims to satisfy replica count",
            NodePool={"name": name},
            current=len(running),
            desired=replicas_of(pool),
            nodeclaims=chosen,
        )
        for claim_name in chosen:
            claim = self.cluster_claim(claim_name)
            uid = str(_meta(claim or {}).get("uid") or "") or None
            with contextlib.suppress(NotFoundError):
                await self.client.delete(NODECLAIMS, claim_name, uid=uid)
            self._deleted[claim_name] = self.clock.now()
            if claim is not None:
                count_disrupted(claim, REASON_OVERPROVISIONED)

    def cluster_claim(self, name: str) -> JSON | None:
        return next((c for c in self.cluster.nodeclaims() if _meta(c).get("name") == name), None)

    def surplus_order(self, running: Sequence[str]) -> list[str]:
        """`running` NodeClaims in the order they go: unlaunched, empty, then least disruptive."""
        nodes: dict[str, StateNode] = {
            n.nodeclaim_name: n for n in self.cluster.nodes() if n.nodeclaim_name
        }
        claims = {str(_meta(c).get("name")): c for c in self.cluster.nodeclaims()}
        now = self.clock.wall()

        def key(claim_name: str) -> tuple[int, int, int, float, str]:
            claim = claims.get(claim_name) or {}
            node = nodes.get(claim_name)
            if node is None or not (claim.get("status") or {}).get("providerID"):
                return (0, 0, -_priority(claim), 0.0, claim_name)
            blocked = any(do_not_disrupt_active(p, now) for p in node.pods)
            pods = node.reschedulable_pods()
            if not pods and not blocked:
                return (1, 0, -_priority(claim), 0.0, claim_name)
            cost = sum(eviction_cost(p) for p in pods)
            return (2, int(blocked), -_priority(claim), cost, claim_name)

        return sorted(running, key=key)
