"""Acting on one parsed message: find the NodeClaim and Node of each instance, record the events,
mark the spot offering unavailable, and delete the NodeClaim for the kinds that drain.

The NodeClaim first gets `DisruptionReason=True` (reason: the message kind, as Karpenter writes
it, so the termination metrics name the cause), then is deleted with its UID as precondition;
the termination controller taints, drains within PodDisruptionBudgets and terminates the
instance, and the provisioner places the evicted pods elsewhere. A NodeClaim already being
deleted is left alone, so a message delivered twice acts once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws_labels
from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import is_deleting, label, meta
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1 import labels
from karpy.cloudprovider.aws.instances import instance_id_of
from karpy.cloudprovider.aws.interruption.actions import (
    ACTIONS,
    TERMINATING_ON_INTERRUPTION,
    Action,
    KindAction,
)
from karpy.cloudprovider.aws.interruption.messages import Message
from karpy.cloudprovider.aws.interruption.metrics import ACTIONS_PERFORMED
from karpy.cloudprovider.aws.reservations import CapacityReservations
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.kube import Cache, Client, Clock
from karpy.kube.errors import ConflictError, NotFoundError
from karpy.kube.events import WARNING, EventRecorder
from karpy.kube.resources import NODES
from karpy.kube.store import IndexFunc

__all__ = ["INDEX_INSTANCE_ID", "DisruptedHook", "MessageHandler"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.cloudprovider.aws.interruption")

INDEX_INSTANCE_ID: Final = "aws.instanceID"
MARK_ATTEMPTS: Final = 5

DisruptedHook = Callable[[Mapping[str, Any], str], None]
"""Told about every NodeClaim deleted, with the reason (karpenter_nodeclaims_disrupted_total)."""


def _claim_instance(claim: JSON) -> tuple[str, ...]:
    found = instance_id_of(str((claim.get("status") or {}).get("providerID") or ""))
    return (found,) if found else ()


def _node_instance(node: JSON) -> tuple[str, ...]:
    found = instance_id_of(str((node.get("spec") or {}).get("providerID") or ""))
    return (found,) if found else ()


_BY_CLAIM_INSTANCE: IndexFunc = _claim_instance
_BY_NODE_INSTANCE: IndexFunc = _node_instance


def _ref(obj: Mapping[str, Any], *, api_version: str, kind: str) -> JSON:
    return {"apiVersion": api_version, "kind": kind, "metadata": dict(meta(obj))}


class MessageHandler:
    """Applies messages to the cluster; raises when an API call failed (the message stays)."""

    def __init__(
        self,
        *,
        client: Client,
        cache: Cache,
        events: EventRecorder,
        unavailable: UnavailableOfferings,
        clock: Clock,
        on_disrupted: DisruptedHook | None = None,
        reservations: CapacityReservations | None = None,
    ) -> None:
        self.client = client
        self.reservations = reservations
        """Where a capacity-reservation interruption marks its reservation full."""
        self.events = events
        self.unavailable = unavailable
        self.clock = clock
        self.on_disrupted = on_disrupted
        cache.add_indexer(NODECLAIMS, INDEX_INSTANCE_ID, _BY_CLAIM_INSTANCE)
        cache.add_indexer(NODES, INDEX_INSTANCE_ID, _BY_NODE_INSTANCE)
        self.nodeclaims = cache.informer(NODECLAIMS)
        self.nodes = cache.informer(NODES)

    async def handle(self, message: Message) -> int:
        """Act on every NodeClaim the message names; returns how many were deleted now."""
        spec = ACTIONS.get(message.kind)
        if spec is None:
            return 0
        deleted = 0
        for instance_id in message.instance_ids:
            claims = self.nodeclaims.by_index(INDEX_INSTANCE_ID, instance_id)
            if not claims:
                log.debug(
                    "no nodeclaim for instance", instance=instance_id, messageKind=message.kind
                )
                continue
            nodes = self.nodes.by_index(INDEX_INSTANCE_ID, instance_id)
            for claim in claims:
                if await self._act(message, spec, claim, nodes[0] if nodes else None):
                    deleted += 1
        return deleted

    async def _act(
        self, message: Message, spec: KindAction, claim: JSON, node: JSON | None
    ) -> bool:
        claim_labels = meta(claim).get("labels") or {}
        if spec.mark_spot_unavailable:
            # Even on a replay: the cache lives in memory and a restart forgot it.
            instance_type = claim_labels.get(labels.LABEL_INSTANCE_TYPE, "")
            zone = claim_labels.get(labels.LABEL_TOPOLOGY_ZONE, "")
            if instance_type and zone:
                self.unavailable.mark_unavailable(labels.CAPACITY_TYPE_SPOT, instance_type, zone)
        if spec.mark_reservation_unavailable and self.reservations is not None:
            reservation = claim_labels.get(aws_labels.LABEL_CAPACITY_RESERVATION_ID, "")
            if reservation:
                self.reservations.mark_unavailable(reservation)
        if is_deleting(claim):
            return False
        bound = log.bind(
            NodeClaim={"name": meta(claim).get("name")},
            Node={"name": meta(node).get("name")} if node else None,
            messageKind=str(message.kind),
            action=str(spec.action),
            instance=_claim_instance(claim)[0],
        )
        self._publish(claim, node, spec.notice.type, spec.notice.reason, spec.notice.message)
        ACTIONS_PERFORMED.labels(str(spec.action), label(claim, labels.LABEL_NODEPOOL)).inc()
        if spec.action is Action.NO_ACTION:
            bound.info("recorded interruption message")
            return False
        if not await self._delete(claim, str(message.kind)):
            return False
        bound.info("initiating delete from interruption message")
        self._publish(
            claim,
            node,
            WARNING,
            TERMINATING_ON_INTERRUPTION,
            "Interruption triggered termination for the {kind}",
        )
        if self.on_disrupted is not None:
            self.on_disrupted(claim, str(message.kind))
        return True

    def _publish(
        self, claim: JSON, node: JSON | None, type_: str, reason: str, message: str
    ) -> None:
        self.events.publish(
            _ref(claim, api_version=NODECLAIMS.api_version, kind=NODECLAIMS.kind),
            type=type_,
            reason=reason,
            message=message.format(kind="NodeClaim"),
        )
        if node is not None:
            self.events.publish(
                _ref(node, api_version="v1", kind="Node"),
                type=type_,
                reason=reason,
                message=message.format(kind="Node"),
            )

    async def _delete(self, claim: JSON, reason: str) -> bool:
        """Write the disruption reason, then delete this very NodeClaim; False when it is gone,
        replaced or already being deleted. The DELETE carries the UID and the resourceVersion
        just seen not deleting, so of two deliveries of one message handled at once only one
        deletes (the other sees a conflict, looks again and finds it deleting)."""
        name = str(meta(claim).get("name") or "")
        uid = str(meta(claim).get("uid") or "") or None
        current: JSON | None = claim
        for _ in range(MARK_ATTEMPTS):
            if current is None or is_deleting(current):
                return False
            if uid is not None and meta(current).get("uid") != uid:
                return False
            try:
                conditions = Conditions.of(current, now=self.clock.wall())
                if conditions.set(
                    cond.NODECLAIM_DISRUPTION_REASON,
                    cond.STATUS_TRUE,
                    reason=reason,
                    message=reason,
                ):
                    patch = {
                        "metadata": {"resourceVersion": meta(current).get("resourceVersion")},
                        "status": {"conditions": conditions.items},
                    }
                    current = await self.client.patch_status(NODECLAIMS, name, patch)
                await self.client.delete(
                    NODECLAIMS,
                    name,
                    uid=uid,
                    resource_version=str(meta(current).get("resourceVersion") or "") or None,
                )
                return True
            except NotFoundError:
                return False
            except ConflictError:
                try:
                    current = await self.client.get(NODECLAIMS, name)
                except NotFoundError:
                    return False
        raise ConflictError(
            status=409,
            reason="Conflict",
            message=f"NodeClaim {name!r} kept changing while deleting it for an interruption",
        )
