"""The `node.termination` controller: the `karpenter.sh/termination` finalizer of Nodes.

A Node karpy launched is deleted (by a person, by disruption, by the NodeClaim's own finalizer);
before the finalizer goes, the node is emptied and its instance terminated, in Karpenter's order:

1. delete the owning NodeClaim, if it is not already going;
2. if the node is not Ready and the provider says the instance is gone, there is nothing left
   to drain: remove the finalizer;
3. read the termination deadline (the NodeClaim's `karpenter.sh/nodeclaim-termination-timestamp`,
   set from its terminationGracePeriod) and warn that pods will be deleted by then;
4. taint `karpenter.sh/disrupted:NoSchedule` and label the node out of external load balancers;
5. drain through the eviction queue (`Drained=Unknown/Draining`, requeue every second while
   pods remain, at least `min_drain_time` after the drain began), then `Drained=True`;
6. wait for the VolumeAttachments of the drained pods' volumes to go (`VolumesDetached`), unless
   the deadline has passed;
7. terminate the instance (`InstanceTerminating=True`, requeue 5 s until the provider says
   NotFound);
8. remove the finalizer.

Every step derives from what is observed, so a restart resumes where the last process stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

import structlog

from karpy.apis.objects import (
    format_time,
    get_condition,
    has_finalizer,
    is_condition_true,
    is_deleting,
    is_node_ready,
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
    nodeclaim_model,
    object_ref,
    remove_node_finalizer,
    termination_deadline,
)
from karpy.controllers.common.status import write_condition
from karpy.controllers.node.termination import metrics
from karpy.controllers.node.termination.drain import (
    drain,
    pending_volume_attachments,
    taint_node,
)
from karpy.controllers.node.termination.eviction import FORCEFUL_TERMINATION, EvictionQueue
from karpy.kube import (
    NORMAL,
    WARNING,
    Client,
    Clock,
    ConflictError,
    EventRecorder,
    Informer,
    NotFoundError,
    Result,
    TerminalError,
)
from karpy.kube.builder import Builder

__all__ = ["MIN_DRAIN_TIME", "NodeTerminationController"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.node.termination")

MIN_DRAIN_TIME: Final = 5.0
"""Seconds a drain lasts at least, so pods bound just before the taint are seen and drained."""
WORKERS: Final = 100
"""As Karpenter's minimum: a hundred nodes interrupted at once are tainted and drained together,
not ten at a time (each drain requeues every second until its pods are gone)."""
READ_OWN_WRITES: Final = 1.0
INSTANCE_POLL: Final = 5.0
REASON_DRAINING: Final = "Draining"
REASON_AWAITING_VOLUME_DETACHMENT: Final = "AwaitingVolumeDetachment"
REASON_GRACE_PERIOD_ELAPSED: Final = "TerminationGracePeriodElapsed"


class NodeTerminationController:
    """Finalizes deleted Nodes; a leader-only runnable."""

    name: Final = "node.termination"

    def __init__(
        self,
        *,
        client: Client,
        nodes: Informer,
        nodeclaims: Informer,
        pods: Informer,
        volume_attachments: Informer,
        claims: Informer,
        cloud_provider: CloudProvider,
        events: EventRecorder,
        eviction_queue: EvictionQueue,
        clock: Clock,
        workers: int = WORKERS,
        min_drain_time: float = MIN_DRAIN_TIME,
    ) -> None:
        self.client = client
        self.nodes = nodes
        self.nodeclaims = nodeclaims
        self.pods = pods
        self.volume_attachments = volume_attachments
        self.claims = claims
        self.cloud_provider = cloud_provider
        self.events = events
        self.eviction_queue = eviction_queue
        self.clock = clock
        self.min_drain_time = min_drain_time
        ensure_provider_id_index(nodeclaims)
        self.workers = workers

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodes, predicate=_terminating)
        builder.watches(self.pods, mapper=self._node_of_pod)
        builder.watches(self.volume_attachments, mapper=self._node_of_attachment)
        builder.workers(self.workers).log_kind("Node")

    # -- event mapping ----------------------------------------------------------------------------

    def _terminating_node(self, name: object) -> str | None:
        if not isinstance(name, str) or not name:
            return None
        node = self.nodes.get(name)
        return name if node is not None and _terminating(node) else None

    def _node_of_pod(self, pod: JSON) -> str | None:
        return self._terminating_node((pod.get("spec") or {}).get("nodeName"))

    def _node_of_attachment(self, attachment: JSON) -> str | None:
        return self._terminating_node((attachment.get("spec") or {}).get("nodeName"))

    # -- reconcile --------------------------------------------------------------------------------

    async def reconcile(self, name: str) -> Result | None:
        node = self.nodes.get(name)
        if node is None or not _terminating(node):
            return None
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        claims = (
            self.nodeclaims.by_index(INDEX_NODECLAIM_PROVIDER_ID, provider_id)
            if provider_id
            else []
        )
        if len(claims) != 1:
            if not claims and await self._instance_gone(provider_id):
                await self._remove_finalizer(node)
                return None
            raise TerminalError(
                "failed to terminate node, expected a single associated nodeclaim, "
                f"found {len(claims)}"
            )
        claim = claims[0]
        with structlog.contextvars.bound_contextvars(NodeClaim={"name": meta(claim).get("name")}):
            return await self._finalize(node, claim, provider_id)

    async def _finalize(self, node: JSON, claim: JSON, provider_id: str) -> Result | None:
        deleted = is_deleting(claim) or await delete_exactly(
            self.client, resource=NODECLAIMS, obj=claim
        )
        if not deleted:
            return Result(requeue_after=READ_OWN_WRITES)
        if not is_node_ready(node) and await self._instance_gone(provider_id):
            await self._remove_finalizer(node)
            return None
        deadline = termination_deadline(claim)
        if deadline is not None:
            self.events.publish(
                _node_ref(node),
                type=WARNING,
                reason="TerminationGracePeriodExpiring",
                message=f"All pods will be deleted by {format_time(deadline)}",
            )
        try:
            await taint_node(self.client, node)
        except ConflictError:
            return Result(requeue=True)
        now = self.clock.wall()
        try:
            if not is_condition_true(claim, conditions.NODECLAIM_DRAINED):
                return await self._await_drain(node, claim, deadline, now)
            waiting = await self._await_volume_detachment(node, claim, deadline, now)
            if waiting is not None:
                return waiting
            return await self._await_instance_termination(node, claim)
        except ConflictError:
            return Result(requeue=True)
        except NotFoundError:
            return Result(requeue_after=READ_OWN_WRITES)

    async def _await_drain(
        self, node: JSON, claim: JSON, deadline: datetime | None, now: datetime
    ) -> Result:
        name = str(meta(node).get("name"))
        remaining = drain(
            name,
            pods=self.pods,
            queue=self.eviction_queue,
            deadline=deadline,
            reason=_disruption_reason(claim),
            now=now,
        )
        if remaining:
            self.events.publish(
                _node_ref(node),
                type=WARNING,
                reason="FailedDraining",
                message=f"Failed to drain node, {remaining} pods are waiting to be evicted",
            )
        draining = await write_condition(
            self.client,
            NODECLAIMS,
            claim,
            type_=conditions.NODECLAIM_DRAINED,
            status=conditions.STATUS_UNKNOWN,
            reason=REASON_DRAINING,
            message=REASON_DRAINING,
            now=now,
        )
        if draining is not None:
            return Result(requeue_after=READ_OWN_WRITES)
        if remaining:
            return Result(requeue_after=READ_OWN_WRITES)
        started = parse_time(
            (get_condition(claim, conditions.NODECLAIM_DRAINED) or {}).get("lastTransitionTime")
        )
        if started is not None:
            left = (started + timedelta(seconds=self.min_drain_time) - now).total_seconds()
            if left > 0:
                return Result(requeue_after=left)
        drained = await write_condition(
            self.client,
            NODECLAIMS,
            claim,
            type_=conditions.NODECLAIM_DRAINED,
            status=conditions.STATUS_TRUE,
            now=now,
        )
        if drained is not None:
            metrics.NODES_DRAINED.labels(label(node, labels.LABEL_NODEPOOL)).inc()
        return Result(requeue_after=READ_OWN_WRITES)

    async def _await_volume_detachment(
        self, node: JSON, claim: JSON, deadline: datetime | None, now: datetime
    ) -> Result | None:
        pending = pending_volume_attachments(
            str(meta(node).get("name")),
            pods=self.pods,
            claims=self.claims,
            attachments=self.volume_attachments,
            now=now,
        )
        waiting = bool(pending) and (deadline is None or now < deadline)
        if waiting:
            self.events.publish(
                _node_ref(node),
                type=NORMAL,
                reason=REASON_AWAITING_VOLUME_DETACHMENT,
                message=f"Awaiting deletion of bound volumeattachments ({', '.join(pending)})",
            )
        if not pending:
            status, reason = conditions.STATUS_TRUE, None
        elif waiting:
            status, reason = conditions.STATUS_UNKNOWN, REASON_AWAITING_VOLUME_DETACHMENT
        else:
            status, reason = conditions.STATUS_FALSE, REASON_GRACE_PERIOD_ELAPSED
        written = await write_condition(
            self.client,
            NODECLAIMS,
            claim,
            type_=conditions.NODECLAIM_VOLUMES_DETACHED,
            status=status,
            reason=reason,
            message=reason or "",
            now=now,
        )
        if waiting or written is not None:
            return Result(requeue_after=READ_OWN_WRITES)
        return None

    async def _await_instance_termination(self, node: JSON, claim: JSON) -> Result | None:
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
            await self._remove_finalizer(node)
            return None
        return Result(requeue_after=INSTANCE_POLL)

    # -- helpers ----------------------------------------------------------------------------------

    async def _instance_gone(self, provider_id: str) -> bool:
        if not provider_id:
            return True
        try:
            await self.cloud_provider.get(provider_id)
        except NodeClaimNotFoundError:
            return True
        return False

    async def _remove_finalizer(self, node: JSON) -> None:
        try:
            await remove_node_finalizer(self.client, node)
        except NotFoundError:
            return
        nodepool = label(node, labels.LABEL_NODEPOOL)
        zone = label(node, labels.LABEL_TOPOLOGY_ZONE)
        metrics.NODES_TERMINATED.labels(nodepool, zone).inc()
        now = self.clock.wall()
        deleted_at = parse_time(meta(node).get("deletionTimestamp"))
        if deleted_at is not None:
            metrics.NODE_TERMINATION_DURATION.labels(nodepool).observe(
                max((now - deleted_at).total_seconds(), 0.0)
            )
        created_at = parse_time(meta(node).get("creationTimestamp"))
        if created_at is not None:
            metrics.NODE_LIFETIME.labels(nodepool).observe(
                max((now - created_at).total_seconds(), 0.0)
            )
        log.info("deleted node")


def _terminating(node: Mapping[str, Any]) -> bool:
    return is_deleting(node) and has_finalizer(node)


def _node_ref(node: Mapping[str, Any]) -> JSON:
    return object_ref(node, kind="Node", api_version="v1")


def _disruption_reason(claim: Mapping[str, Any]) -> str:
    condition = get_condition(claim, conditions.NODECLAIM_DISRUPTION_REASON)
    if condition is not None and condition.get("status") == conditions.STATUS_TRUE:
        return str(condition.get("reason") or FORCEFUL_TERMINATION)
    return FORCEFUL_TERMINATION
