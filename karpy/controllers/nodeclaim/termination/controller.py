"""The `karpenter.sh/termination` finalizer of NodeClaims.

A deleted NodeClaim goes in Karpenter's order:

1. with a `terminationGracePeriod`, stamp `karpenter.sh/nodeclaim-termination-timestamp`
   (deletion time + grace period): the moment the node's drain stops asking and deletes pods;
2. if its Node registered, delete the Node(s) and wait for them to go — the Node's own
   finalizer (`node.termination`) drains it and terminates the instance;
3. if it launched, delete the instance (`InstanceTerminating=True`), every 5 s until the provider
   says NotFound;
4. remove the finalizer.

`NodeClaimTermination.finalize` is the whole flow for one NodeClaim. It runs as its own
controller (`nodeclaim.termination`, acting only on NodeClaims being deleted), so the lifecycle
controller, which launches and registers, leaves deleting NodeClaims alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

import structlog

from karpy.apis.objects import (
    format_time,
    get_condition,
    has_finalizer,
    is_condition_true,
    is_deleting,
    label,
    meta,
    parse_time,
)
from karpy.apis.v1 import conditions, labels
from karpy.cloudprovider.types import CloudProvider, NodeClaimNotFoundError
from karpy.controllers.common.objects import (
    INDEX_NODECLAIM_PROVIDER_ID,
    NODECLAIMS,
    delete_exactly,
    ensure_provider_id_index,
    grace_period,
    nodeclaim_model,
    remove_claim_finalizer,
)
from karpy.controllers.common.status import write_condition
from karpy.controllers.nodeclaim.termination import metrics
from karpy.kube import (
    INDEX_PROVIDER_ID,
    NODES,
    Client,
    Clock,
    ConflictError,
    Informer,
    InvalidError,
    NotFoundError,
    Result,
)
from karpy.kube.builder import Builder

__all__ = ["INSTANCE_POLL", "NodeClaimTermination"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.nodeclaim.termination")

INSTANCE_POLL: Final = 5.0
WORKERS: Final = 100
"""Karpenter finalizes NodeClaims in its lifecycle controller (1,000 workers and more): a hundred
NodeClaims deleted at once (a spot interruption wave) must all reach their Nodes at once."""


class NodeClaimTermination:
    """Finalizes deleted NodeClaims; a leader-only runnable (`nodeclaim.termination`)."""

    name: Final = "nodeclaim.termination"

    def __init__(
        self,
        *,
        client: Client,
        nodeclaims: Informer,
        nodes: Informer,
        cloud_provider: CloudProvider,
        clock: Clock,
        workers: int = WORKERS,
    ) -> None:
        self.client = client
        self.nodeclaims = nodeclaims
        self.nodes = nodes
        self.cloud_provider = cloud_provider
        self.clock = clock
        ensure_provider_id_index(nodeclaims)
        self.workers = workers

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclaims, predicate=_finalizing)
        builder.watches(self.nodes, mapper=self._claims_of_node)
        builder.workers(self.workers).log_kind("NodeClaim")

    def _claims_of_node(self, node: JSON) -> list[str]:
        provider_id = (node.get("spec") or {}).get("providerID")
        if not provider_id:
            return []
        return [
            str(meta(claim).get("name"))
            for claim in self.nodeclaims.by_index(INDEX_NODECLAIM_PROVIDER_ID, str(provider_id))
            if _finalizing(claim)
        ]

    async def reconcile(self, name: str) -> Result | None:
        claim = self.nodeclaims.get(name)
        if claim is None or not is_deleting(claim):
            return None
        try:
            return await self.finalize(claim)
        except (ConflictError, InvalidError):
            return Result(requeue=True)  # our view was stale: read again
        except NotFoundError:
            return None

    async def finalize(self, claim: JSON) -> Result | None:
        """One pass of the finalizer for a NodeClaim that is being deleted."""
        if not has_finalizer(claim):
            return None
        claim = await self._stamp_termination_time(claim)
        provider_id = str((claim.get("status") or {}).get("providerID") or "")
        if is_condition_true(claim, conditions.NODECLAIM_REGISTERED) and provider_id:
            nodes = self.nodes.by_index(INDEX_PROVIDER_ID, provider_id)
            for node in nodes:
                if not is_deleting(node):
                    await delete_exactly(self.client, resource=NODES, obj=node)
            if nodes:
                return None  # the Node's deletion event brings us back
        if provider_id:
            terminating = await write_condition(
                self.client,
                NODECLAIMS,
                claim,
                type_=conditions.NODECLAIM_INSTANCE_TERMINATING,
                status=conditions.STATUS_TRUE,
                now=self.clock.wall(),
            )
            claim = terminating or claim
            try:
                await self.cloud_provider.delete(nodeclaim_model(claim))
            except NodeClaimNotFoundError:
                self._observe_instance_termination(claim)
            else:
                return Result(requeue_after=INSTANCE_POLL)
        if await remove_claim_finalizer(self.client, claim) is not None:
            self._observe_termination(claim)
            log.info("deleted nodeclaim")
        return None

    async def _stamp_termination_time(self, claim: JSON) -> JSON:
        """Annotate when the grace period runs out (deletion + terminationGracePeriod), once."""
        period = grace_period(claim)
        annotations = meta(claim).get("annotations") or {}
        if period is None or labels.ANNOTATION_NODECLAIM_TERMINATION_TIMESTAMP in annotations:
            return claim
        deleted_at = parse_time(meta(claim).get("deletionTimestamp"))
        if deleted_at is None:
            return claim
        stamp = format_time(deleted_at + period)
        patch = {
            "metadata": {"annotations": {labels.ANNOTATION_NODECLAIM_TERMINATION_TIMESTAMP: stamp}}
        }
        updated: JSON = await self.client.patch(NODECLAIMS, str(meta(claim).get("name")), patch)
        return updated

    def _observe_instance_termination(self, claim: Mapping[str, Any]) -> None:
        condition = get_condition(claim, conditions.NODECLAIM_INSTANCE_TERMINATING) or {}
        since = parse_time(condition.get("lastTransitionTime"))
        if since is not None:
            metrics.INSTANCE_TERMINATION_DURATION.labels(
                label(claim, labels.LABEL_NODEPOOL)
            ).observe(max((self.clock.wall() - since).total_seconds(), 0.0))

    def _observe_termination(self, claim: Mapping[str, Any]) -> None:
        nodepool = label(claim, labels.LABEL_NODEPOOL)
        metrics.NODECLAIMS_TERMINATED.labels(
            nodepool,
            label(claim, labels.LABEL_CAPACITY_TYPE),
            label(claim, labels.LABEL_TOPOLOGY_ZONE),
        ).inc()
        deleted_at = parse_time(meta(claim).get("deletionTimestamp"))
        if deleted_at is not None:
            elapsed = max(self.clock.wall() - deleted_at, timedelta(0))
            metrics.NODECLAIM_TERMINATION_DURATION.labels(nodepool).observe(elapsed.total_seconds())


def _finalizing(claim: Mapping[str, Any]) -> bool:
    return is_deleting(claim) and has_finalizer(claim)
