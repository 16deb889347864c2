"""Record when a pod last arrived on or left a node, as the NodeClaim's `lastPodEventTime`.

A pod event is a pod being bound to a node, a bound pod turning terminal (Succeeded/Failed),
starting to terminate, or disappearing. DaemonSet pods do not count: they come and go with the
node. The write is skipped when the recorded time is less than `DEDUPE_WINDOW` old, so a burst
of pods costs one patch. Pods already bound when karpy starts are not events: their NodeClaim
already carries the time of their arrival.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

import structlog

from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import is_deleting, parse_time
from karpy.controllers.common.status import patch_status, timestamp
from karpy.kube import (
    INDEX_PROVIDER_ID,
    Client,
    Clock,
    Informer,
    RealClock,
    Result,
)
from karpy.kube.builder import Builder

__all__ = ["DEDUPE_WINDOW", "NAME", "PodEventsController", "is_pod_event"]

NAME = "nodeclaim.podevents"
DEDUPE_WINDOW: Final = timedelta(seconds=10)
log = structlog.get_logger("karpy.controllers.nodeclaim.podevents")

JSON = dict[str, Any]


def _node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _daemonset(pod: Mapping[str, Any]) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "DaemonSet" for o in owners)


def is_pod_event(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str | None:
    """The node whose pods changed between two versions of a pod (None: no pod event).

    `old` None is a pod seen for the first time (not an event); `new` None is a deletion.
    """
    if old is None:
        return None
    pod = new if new is not None else old
    node = _node_name(pod)
    if not node or _daemonset(pod):
        return None
    if new is None:
        return node if not _terminal(old) else None
    if not _node_name(old):
        return node  # bound
    if _terminal(new) and not _terminal(old):
        return node
    if is_deleting(new) and not is_deleting(old):
        return node
    return None


class PodEventsController:
    """A leader-only runnable: watches pod transitions and stamps the NodeClaim of their node."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        pods: Informer,
        nodes: Informer,
        nodeclaims: Informer,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.pods = pods
        self.nodes = nodes
        self.nodeclaims = nodeclaims
        self.clock = clock or RealClock()

    def __repr__(self) -> str:
        return f"<{NAME}>"

    def setup(self, builder: Builder[str]) -> None:
        builder.watches_changes(self.pods, lambda old, new: is_pod_event(old, new) or None)
        builder.workers(10).log_kind("Node")

    def nodeclaim_for_node(self, node_name: str) -> JSON | None:
        node = self.nodes.get(node_name)
        if node is None:
            return None
        provider_id = (node.get("spec") or {}).get("providerID")
        if not provider_id:
            return None
        try:
            claims = self.nodeclaims.by_index(INDEX_PROVIDER_ID, provider_id)
        except KeyError:  # no index on this informer: look through all
            claims = [
                c
                for c in self.nodeclaims.list()
                if (c.get("status") or {}).get("providerID") == provider_id
            ]
        return claims[0] if len(claims) == 1 else None

    async def reconcile(self, node_name: str) -> Result | None:
        claim = self.nodeclaim_for_node(node_name)
        if claim is None:
            return None
        now = self.clock.wall()
        last = parse_time((claim.get("status") or {}).get("lastPodEventTime"))
        if last is not None and now - last < DEDUPE_WINDOW:
            return None
        await patch_status(
            self.client,
            resource=NODECLAIMS,
            obj=claim,
            status={"lastPodEventTime": timestamp(self.clock)},
            optimistic_lock=False,
        )
        return None
