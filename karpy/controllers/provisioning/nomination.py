"""Telling kube-scheduler where karpy planned each pod (`status.nominatedNodeName`).

kube-scheduler places pods itself, and by default it spreads them over every node with room,
so pods planned to share a node can end up scattered and the rest no longer fit: more nodes
than planned. Kubernetes lets an autoscaler express its expected placement as the pod's
`nominatedNodeName` (KEP-5278, stable in 1.37): the scheduler tries that node first and counts
nominated pods as already there when placing others. karpy sets it when the pod is still
pending and unnominated, on a Node that exists (the scheduler drops a nomination to a node it
cannot see), just before the Node is registered and becomes schedulable.

kube-scheduler clears a nomination whenever an attempt to place the pod fails, and it may
try the pod in the moment between the nomination and the node becoming schedulable (it retries
pending pods on every node event, and nodes register in bursts). A pod whose nomination is lost
that way is placed on whatever node has room and displaces a pod planned there.

The component that nominates owns the nomination: `NominationJanitor` restores karpy's own
(recorded in a ledger) that kube-scheduler cleared before their node took pods (registered and
initialized), clears nominations whose node is gone, and karpy's own when the node is ready but
the pod has stayed unschedulable there for a grace period, or at once when the pods bound there
leave it no room (other pods took it; kube-scheduler may not try the pod again for minutes), so
the pod is provisioned for again. Nominations kube-scheduler made for preemption are never
withdrawn while their node exists.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, Final

import structlog

from karpy.apis.objects import has_unregistered_taint
from karpy.apis.v1 import labels
from karpy.kube.builder import Builder
from karpy.kube.client import Client
from karpy.kube.clock import Clock, RealClock
from karpy.kube.controller import Result
from karpy.kube.errors import ConflictError, NotFoundError
from karpy.kube.informer import Informer
from karpy.kube.resources import PODS, split_key
from karpy.kube.store import INDEX_NODE_NAME
from karpy.scheduling.resources import (
    ResourceError,
    add,
    fits,
    parse_resources,
    pod_requests,
    subtract,
)
from karpy.state import pods as podutil

__all__ = [
    "NominationJanitor",
    "awaiting_node",
    "nominate_placements",
    "nominate_pods",
    "ready_for_pods",
]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.provisioning")
CONCURRENCY = 20
GRACE = 30.0
ROOM_RECHECK = 5.0
"""How often a pending pod nominated by karpy to a ready node has its room checked: other pods
binding there can take it, and kube-scheduler may not try the pod again for minutes."""
NOMINATE_ATTEMPTS = 3


def _nominated(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("nominatedNodeName") or "")


def ready_for_pods(node: Mapping[str, Any]) -> bool:
    """The node takes pods: registered and, when karpy launched it, initialized (Ready, its
    startup taints gone). Until then kube-scheduler's attempts there fail."""
    if has_unregistered_taint(node):
        return False
    node_labels = (node.get("metadata") or {}).get("labels") or {}
    managed = labels.LABEL_NODEPOOL in node_labels
    return not managed or node_labels.get(labels.LABEL_NODE_INITIALIZED) == "true"


def awaiting_node(key: str, ledger: Mapping[str, str], nodes: Informer) -> bool:
    """The pod is planned onto a node of ours that does not take pods yet (its nomination may
    have been cleared meanwhile): it needs no new plan."""
    node = nodes.get(ledger.get(key, ""))
    return node is not None and not ready_for_pods(node)


async def _nominate(client: Client, pod: JSON, node_name: str) -> bool:
    """Set the pod's nomination if it is still pending and unnominated. kube-scheduler writes
    pending pods' status all the time, so a conflict is normal: look again and retry."""
    namespace, name = split_key(podutil.pod_key(pod))
    for _ in range(NOMINATE_ATTEMPTS):
        if podutil.node_name(pod) or _nominated(pod) or not podutil.is_active(pod):
            return False
        try:
            await client.patch_status(
                PODS,
                name,
                {
                    "metadata": {
                        "resourceVersion": (pod.get("metadata") or {}).get("resourceVersion")
                    },
                    "status": {"nominatedNodeName": node_name},
                },
                namespace=namespace,
            )
            return True
        except NotFoundError:
            return False
        except ConflictError:
            try:
                pod = await client.get(PODS, name, namespace=namespace)
            except NotFoundError:
                return False
    return False


async def nominate_pods(
    client: Client,
    pods: Informer,
    keys: Iterable[str],
    node_name: str,
    *,
    ledger: MutableMapping[str, str],
) -> int:
    """Nominate the pending, unnominated ones of `keys` to `node_name`, recording each in
    `ledger`; returns how many."""
    return await nominate_placements(client, pods, {node_name: list(keys)}, ledger=ledger)


async def nominate_placements(
    client: Client,
    pods: Informer,
    placements: Mapping[str, Iterable[str]],
    *,
    ledger: MutableMapping[str, str],
) -> int:
    """Nominate pods to nodes (`placements`: node name -> pod keys) with one bound on
    concurrent requests for all nodes: a batch that fills a hundred existing nodes makes a
    hundred nodes' worth of requests at once, not one node's after another's.

    The ledger is written before the requests and put back for the pods that were not
    nominated. A pod taken from its NodeClaim's plan at registration is coming to that node
    only by its ledger entry until the cache shows the nomination: a batch gathered in between
    (a hundred nodes register in the same seconds, each write waiting its turn) would plan it
    again, and the new node would stay empty."""
    semaphore = asyncio.Semaphore(CONCURRENCY)
    wanted = [(key, node) for node, keys in placements.items() for key in dict.fromkeys(keys)]
    before = {key: ledger.get(key) for key, _ in wanted}
    for key, node_name in wanted:
        ledger[key] = node_name

    async def one(key: str, node_name: str) -> bool:
        pod = pods.get(key)
        if pod is not None:
            async with semaphore:
                if await _nominate(client, pod, node_name):
                    return True
        if ledger.get(key) == node_name:
            previous = before[key]
            if previous is None:
                del ledger[key]
            else:
                ledger[key] = previous
        return False

    done = await asyncio.gather(*(one(key, node) for key, node in wanted))
    return sum(done)


class NominationJanitor:
    """`provisioner.nomination`: restores karpy's nominations kube-scheduler cleared too early,
    and clears nominations that no longer hold."""

    name: Final = "provisioner.nomination"

    def __init__(
        self,
        *,
        client: Client,
        pods: Informer,
        nodes: Informer,
        ledger: MutableMapping[str, str],
        clock: Clock | None = None,
        grace: float = GRACE,
    ) -> None:
        self.client = client
        self.pods = pods
        self.nodes = nodes
        self.ledger = ledger
        self.clock = clock or RealClock()
        self.grace = grace
        self._stale_since: dict[str, float] = {}
        # Pods whose nomination waits for their node to register: node name -> pod keys.
        self._awaiting: dict[str, set[str]] = {}

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.pods, predicate=self._watched)
        builder.watches(self.nodes, mapper=self._awaiting_node)
        builder.workers(4).log_kind("Pod")

    def _watched(self, pod: Mapping[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        ours = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}" in self.ledger
        if (pod.get("spec") or {}).get("nodeName"):
            return ours  # bound: forget it
        return ours or bool(_nominated(pod))

    def _awaiting_node(self, node: Mapping[str, Any]) -> list[str]:
        return sorted(self._awaiting.get(str((node.get("metadata") or {}).get("name")), ()))

    def _forget(self, key: str) -> None:
        self._stale_since.pop(key, None)
        node_name = self.ledger.pop(key, None)
        if node_name is not None:
            self._unawait(node_name, key)

    def _unawait(self, node_name: str, key: str) -> None:
        waiting = self._awaiting.get(node_name)
        if waiting is not None:
            waiting.discard(key)
            if not waiting:
                del self._awaiting[node_name]

    def _holds(self, key: str, pod: Mapping[str, Any]) -> bool:
        """The nominated node exists and, unless karpy made the nomination, that is all we
        judge; karpy's own also hold while the node is not yet ready for pods or the pod is
        not known to be unschedulable there."""
        target = _nominated(pod)
        node = self.nodes.get(target)
        if node is None or (node.get("metadata") or {}).get("deletionTimestamp"):
            return False
        if self.ledger.get(key) != target:
            return True  # kube-scheduler's (e.g. preemption): not ours to withdraw
        return not (ready_for_pods(node) and podutil.is_unschedulable(pod))

    def _ours_on_ready_node(self, key: str, pod: Mapping[str, Any]) -> bool:
        target = _nominated(pod)
        node = self.nodes.get(target)
        return self.ledger.get(key) == target and node is not None and ready_for_pods(node)

    def _room_gone(self, pod: Mapping[str, Any]) -> bool:
        """The pods bound to the nominated node leave too little of its allocatable for this
        one: kube-scheduler cannot place it there, and may not try it again for minutes (a pod
        it judged unschedulable waits for an event that could help it, or 5 minutes)."""
        target = _nominated(pod)
        node = self.nodes.get(target) or {}
        bound = [p for p in self.pods.by_index(INDEX_NODE_NAME, target) if podutil.is_active(p)]
        try:
            allocatable = parse_resources((node.get("status") or {}).get("allocatable"))
            used = add(*(pod_requests(p.get("spec") or {}) for p in bound))
            wanted = pod_requests(pod.get("spec") or {})
        except ResourceError:
            return False  # not ours to judge: kube-scheduler will say
        return not fits(wanted, subtract(allocatable, used))

    async def reconcile(self, key: str) -> Result | None:
        pod = self.pods.get(key)
        if pod is None or podutil.node_name(pod) or not podutil.is_active(pod):
            self._forget(key)
            return None
        if not _nominated(pod):
            return await self._restore(key, pod)
        recheck = self.grace
        if self._ours_on_ready_node(key, pod):
            if self._room_gone(pod):
                await self._withdraw(key, pod, reason="no room left")
                return None
            recheck = min(ROOM_RECHECK, self.grace)
        if self._holds(key, pod):
            self._stale_since.pop(key, None)
            return Result(requeue_after=recheck)
        now = self.clock.now()
        since = self._stale_since.setdefault(key, now)
        if now - since < self.grace:
            return Result(requeue_after=min(recheck, self.grace - (now - since)))
        gone = self.nodes.get(_nominated(pod)) is None
        await self._withdraw(key, pod, reason="node gone" if gone else "unschedulable")
        return None

    async def _withdraw(self, key: str, pod: JSON, *, reason: str) -> None:
        """Clear the pod's nomination (and forget it), so it is provisioned for again."""
        namespace, name = split_key(key)
        rv = (pod.get("metadata") or {}).get("resourceVersion")
        with contextlib.suppress(ConflictError, NotFoundError):
            await self.client.patch_status(
                PODS,
                name,
                {"metadata": {"resourceVersion": rv}, "status": {"nominatedNodeName": None}},
                namespace=namespace,
            )
            log.info("cleared pod nomination", Pod=key, node=_nominated(pod), reason=reason)
        self._forget(key)

    async def _restore(self, key: str, pod: JSON) -> Result | None:
        """Put back a nomination of ours that kube-scheduler cleared before the node took pods:
        noted while the node has not registered or initialized, restored at its next event once
        it has. A nomination cleared later means the pod did not fit: it is left to be
        provisioned for again (the node is ready, so the pod's capacity is not "coming")."""
        node_name = self.ledger.get(key)
        if node_name is None:
            return None
        node = self.nodes.get(node_name)
        if node is None or (node.get("metadata") or {}).get("deletionTimestamp"):
            self._forget(key)
            return None
        if not ready_for_pods(node):
            self._awaiting.setdefault(node_name, set()).add(key)
            return None
        if key not in self._awaiting.get(node_name, ()):
            # Cleared after the node took pods (the pod did not fit and is provisioned for
            # again), or a cache that has not shown karpy's nomination yet. The entry stays
            # either way: it is what tells that nomination, once seen, as karpy's, to be
            # withdrawn if the pod stays unschedulable there.
            return None
        self._unawait(node_name, key)
        if not await _nominate(self.client, pod, node_name):
            return None  # bound, nominated by kube-scheduler, or gone meanwhile
        log.debug("restored pod nomination", Pod=key, node=node_name)
        return None
