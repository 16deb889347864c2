"""`node.health`: node repair behind the `NodeRepair` feature gate.

A Node of a karpy NodeClaim whose condition matches one of the provider's repair policies (kwok:
`Ready` False or Unknown) for the policy's toleration (kwok: 10 minutes) is replaced forcefully:
its NodeClaim gets `karpenter.sh/nodeclaim-termination-timestamp` = now (the drain does not wait
for PDBs or do-not-disrupt) and is deleted; the provisioner finds the pods a new place. Budgets
do not apply, as Karpenter. To keep a cluster-wide outage from deleting everything, repair is
blocked (an event, a look again in 5 minutes) while more than 20% (rounded up) of the NodePool's
nodes match a policy — of the cluster's nodes for NodeClaims without a NodePool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import structlog
from prometheus_client import Counter

from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import format_time, is_deleting, label, parse_time
from karpy.apis.v1 import labels
from karpy.cloudprovider.types import RepairPolicy
from karpy.controllers.common.metrics import count_disrupted
from karpy.controllers.disruption.events import involved_node, involved_nodepool
from karpy.kube import (
    WARNING,
    Client,
    Clock,
    ConflictError,
    EventRecorder,
    Informer,
    NotFoundError,
    RealClock,
    Result,
)
from karpy.kube.builder import Builder
from karpy.kube.metrics import REGISTRY
from karpy.state import Cluster

__all__ = ["BLOCKED_RECHECK", "NAME", "UNHEALTHY_SHARE", "NodeHealthController", "matching_policy"]

NAME: Final = "node.health"
UNHEALTHY_SHARE: Final = 0.20
BLOCKED_RECHECK: Final = 300.0
REASON_REPAIR_BLOCKED: Final = "NodeRepairBlocked"
DISRUPTION_REASON_UNHEALTHY: Final = "unhealthy"

log = structlog.get_logger("karpy.controllers.node.health")

UNHEALTHY_DISRUPTED_TOTAL = Counter(
    "karpenter_nodeclaims_unhealthy_disrupted_total",
    "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on the "
    "node was disrupted, the owning nodepool, and the image ID.",
    ["condition", "nodepool", "capacity_type", "image_id"],
    registry=REGISTRY,
)

JSON = dict[str, Any]


def matching_policy(
    node: Mapping[str, Any], policies: Sequence[RepairPolicy]
) -> tuple[RepairPolicy, datetime] | None:
    """The first policy whose condition the Node has, with the condition's transition time."""
    for c in (node.get("status") or {}).get("conditions") or ():
        for policy in policies:
            if (
                c.get("type") == policy.condition_type
                and c.get("status") == policy.condition_status
            ):
                since = parse_time(c.get("lastTransitionTime"))
                if since is not None:
                    return policy, since
    return None


def allowed_unhealthy(total: int) -> int:
    """20% of `total`, rounded up."""
    return math.ceil(total * UNHEALTHY_SHARE)


class NodeHealthController:
    """Deletes, forcefully, the NodeClaims of Nodes unhealthy beyond their toleration."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        cluster: Cluster,
        nodes: Informer,
        policies: Sequence[RepairPolicy],
        events: EventRecorder,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.nodes = nodes
        self.policies = tuple(policies)
        self.events = events
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodes)
        builder.workers(10).log_kind("Node")

    async def reconcile(self, name: str) -> Result | None:
        node = self.nodes.get(name)
        if node is None or is_deleting(node):
            return None
        state = self.cluster.node_for_node_name(name)
        claim = state.nodeclaim if state is not None else None
        if claim is None or is_deleting(claim):
            return None
        match = matching_policy(node, self.policies)
        if match is None:
            return None
        policy, since = match
        due = since + policy.toleration
        now = self.clock.wall()
        if now < due:
            return Result(requeue_after=(due - now).total_seconds())
        pool = label(claim, labels.LABEL_NODEPOOL)
        if not self._healthy_enough(pool):
            message = "more than 20% of nodes are unhealthy"
            log.info(
                "node repair blocked", Node={"name": name}, NodePool={"name": pool}, reason=message
            )
            self.events.publish(
                involved_node(node),
                type=WARNING,
                reason=REASON_REPAIR_BLOCKED,
                message=f"Cannot disrupt Node: {message}",
            )
            if pool:
                pool_obj = self.cluster.nodepool_informer.get(pool)
                if pool_obj is not None:
                    self.events.publish(
                        involved_nodepool(pool_obj),
                        type=WARNING,
                        reason=REASON_REPAIR_BLOCKED,
                        message=f"Cannot disrupt NodePool: {message}",
                    )
            return Result(requeue_after=BLOCKED_RECHECK)
        await self._repair(node, claim, policy)
        return None

    def _healthy_enough(self, pool: str) -> bool:
        """At most 20% (rounded up) of the NodePool's nodes (all nodes without a NodePool) are
        unhealthy."""
        total = unhealthy = 0
        for n in self.cluster.nodes():
            if n.node is None or not n.managed:
                continue
            if pool and n.nodepool != pool:
                continue
            total += 1
            if matching_policy(n.node, self.policies) is not None:
                unhealthy += 1
        return unhealthy <= allowed_unhealthy(total)

    async def _repair(self, node: JSON, claim: JSON, policy: RepairPolicy) -> None:
        meta = claim.get("metadata") or {}
        claim_name = str(meta.get("name") or "")
        stamp = format_time(self.clock.wall())
        try:
            await self.client.patch(
                NODECLAIMS,
                claim_name,
                {
                    "metadata": {
                        "annotations": {labels.ANNOTATION_NODECLAIM_TERMINATION_TIMESTAMP: stamp}
                    }
                },
            )
            await self.client.delete(NODECLAIMS, claim_name, uid=meta.get("uid") or None)
        except (NotFoundError, ConflictError):
            return
        log.info(
            "deleting unhealthy node",
            Node={"name": (node.get("metadata") or {}).get("name")},
            NodeClaim={"name": claim_name},
            condition=policy.condition_type,
            status=policy.condition_status,
        )
        UNHEALTHY_DISRUPTED_TOTAL.labels(
            policy.condition_type,
            label(claim, labels.LABEL_NODEPOOL),
            label(claim, labels.LABEL_CAPACITY_TYPE),
            str((claim.get("status") or {}).get("imageID") or ""),
        ).inc()
        count_disrupted(claim, DISRUPTION_REASON_UNHEALTHY)
