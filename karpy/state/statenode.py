"""A `StateNode`: one machine as karpy sees it, the join of a Node and its NodeClaim.

Either half may be missing: a launched NodeClaim whose Node has not registered yet has only the
NodeClaim, a node karpy did not launch has only the Node. Until a managed node is initialized,
its labels, taints and resources come from the NodeClaim (the Node's are incomplete while it
boots), as Karpenter's `StateNode` does. Instances are frozen: `Cluster.nodes()` builds fresh
ones, so a list handed to a worker thread never changes under it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from karpy.apis.v1 import conditions, labels
from karpy.scheduling.resources import ResourceMap, parse_resources, pod_requests, sum_requests
from karpy.state import pods as podutil

__all__ = ["StateNode", "claim_condition"]

JSON = dict[str, Any]


def claim_condition(claim: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    """The raw condition of a type on a NodeClaim (or any object with status.conditions)."""
    if claim is None:
        return None
    for condition in (claim.get("status") or {}).get("conditions") or ():
        if condition.get("type") == type_:
            return condition  # type: ignore[no-any-return]
    return None


def _is_true(claim: Mapping[str, Any] | None, type_: str) -> bool:
    condition = claim_condition(claim, type_)
    return condition is not None and condition.get("status") == conditions.STATUS_TRUE


@dataclass(frozen=True, slots=True)
class StateNode:
    """A node (registered or not) with the pods bound to it, at one moment."""

    key: str
    """The providerID, or the node name for nodes without one."""
    node: JSON | None
    nodeclaim: JSON | None
    pods: tuple[JSON, ...] = ()
    """Pods bound to the node that have not finished (terminating ones included)."""
    planned: tuple[JSON, ...] = ()
    """Pods on their way to the node but not bound yet: planned onto its NodeClaim before the
    Node registered, or nominated to the Node (`status.nominatedNodeName`). A simulation counts
    them as if bound, so later batches only use the room that is really left."""
    marked: bool = False
    """Explicitly marked for deletion (a disruption command is about to delete it)."""
    nominated: bool = False
    """Pods were recently planned onto it; disruption leaves it alone for a while."""

    # -- identity ---------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        source = self.node if self.node is not None else self.nodeclaim
        return str(((source or {}).get("metadata") or {}).get("name") or "")

    @property
    def node_name(self) -> str | None:
        if self.node is None:
            return None
        return str((self.node.get("metadata") or {}).get("name") or "")

    @property
    def nodeclaim_name(self) -> str | None:
        if self.nodeclaim is None:
            return None
        return str((self.nodeclaim.get("metadata") or {}).get("name") or "")

    @property
    def provider_id(self) -> str:
        if self.node is not None and (self.node.get("spec") or {}).get("providerID"):
            return str(self.node["spec"]["providerID"])
        return str(((self.nodeclaim or {}).get("status") or {}).get("providerID") or "")

    @property
    def managed(self) -> bool:
        """Launched by karpy (it has a NodeClaim)."""
        return self.nodeclaim is not None

    @property
    def nodepool(self) -> str | None:
        return self.labels.get(labels.LABEL_NODEPOOL)

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def registered(self) -> bool:
        if self.node is None:
            return False
        if not self.managed:
            return True
        node_labels = (self.node.get("metadata") or {}).get("labels") or {}
        return node_labels.get(labels.LABEL_NODE_REGISTERED) == "true"

    @property
    def initialized(self) -> bool:
        if self.managed:
            return self.node is not None and _is_true(
                self.nodeclaim, conditions.NODECLAIM_INITIALIZED
            )
        return self.node is not None

    @property
    def deleting(self) -> bool:
        """Its NodeClaim is being deleted or its instance terminating (or, unmanaged, the Node
        is being deleted)."""
        if self.nodeclaim is not None:
            meta = self.nodeclaim.get("metadata") or {}
            return bool(meta.get("deletionTimestamp")) or _is_true(
                self.nodeclaim, conditions.NODECLAIM_INSTANCE_TERMINATING
            )
        return bool(((self.node or {}).get("metadata") or {}).get("deletionTimestamp"))

    @property
    def marked_for_deletion(self) -> bool:
        return self.marked or self.deleting

    # -- shape ------------------------------------------------------------------------------------

    def _use_claim(self) -> bool:
        return self.nodeclaim is not None and (self.node is None or not self.initialized)

    @property
    def labels(self) -> dict[str, str]:
        if self.nodeclaim is not None and not self.registered:
            claim_labels = (self.nodeclaim.get("metadata") or {}).get("labels") or {}
            return dict(claim_labels)
        return dict(((self.node or {}).get("metadata") or {}).get("labels") or {})

    @property
    def annotations(self) -> dict[str, str]:
        source = self.node if self.node is not None else self.nodeclaim
        return dict(((source or {}).get("metadata") or {}).get("annotations") or {})

    @property
    def taints(self) -> list[JSON]:
        """Taints pods must tolerate; while a managed node boots, the NodeClaim's (startup and
        boot-time taints are expected to go away)."""
        if self._use_claim():
            assert self.nodeclaim is not None
            return list((self.nodeclaim.get("spec") or {}).get("taints") or ())
        return list(((self.node or {}).get("spec") or {}).get("taints") or ())

    def _resources(self, field: str) -> ResourceMap:
        node_values = parse_resources(
            ((self.node or {}).get("status") or {}).get(field), field=f"status.{field}"
        )
        if not self._use_claim():
            return node_values
        assert self.nodeclaim is not None
        claim_values = parse_resources(
            (self.nodeclaim.get("status") or {}).get(field), field=f"status.{field}"
        )
        # Values the booting Node does not report yet come from the NodeClaim.
        merged = dict(node_values)
        for name, amount in claim_values.items():
            if not merged.get(name):
                merged[name] = amount
        return merged

    @property
    def capacity(self) -> ResourceMap:
        return self._resources("capacity")

    @property
    def allocatable(self) -> ResourceMap:
        return self._resources("allocatable")

    @property
    def pod_requests(self) -> ResourceMap:
        """Requests of every pod on the node, DaemonSet pods included."""
        return sum_requests(pod_requests(p.get("spec") or {}) for p in self.pods)

    @property
    def daemonset_requests(self) -> ResourceMap:
        return sum_requests(
            pod_requests(p.get("spec") or {}) for p in self.pods if podutil.is_owned_by_daemonset(p)
        )

    @property
    def available(self) -> ResourceMap:
        """Allocatable minus the requests of the pods on the node (may go negative)."""
        used = self.pod_requests
        return {k: v - used.get(k, 0) for k, v in self.allocatable.items()}

    def reschedulable_pods(self) -> list[JSON]:
        """Pods that will need a place elsewhere if this node goes."""
        return [p for p in self.pods if podutil.is_reschedulable(p)]

    def is_empty(self) -> bool:
        """No pod that would need to move: DaemonSet, static, finished and terminating pods
        don't count (a do-not-disrupt pod does: it is still there)."""
        return not any(
            podutil.is_active(p)
            and not podutil.is_owned_by_daemonset(p)
            and not podutil.is_owned_by_node(p)
            for p in self.pods
        )
