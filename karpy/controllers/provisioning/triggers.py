"""The provisioner's singleton loop (`provisioner`) and what starts a batch: pods kube-scheduler
gave up on, and nodes being drained.

`provisioner.trigger.pod` watches pods; a provisionable one triggers the batcher and is looked
at again every 10 s while it stays provisionable (so a pod that could not be placed is retried).
A pod whose capacity is already on its way (planned onto a NodeClaim or a node that has not
registered yet) does not trigger: kube-scheduler tries such pods again and again while the new
nodes come up, and each try would hold the next batch open until `BATCH_MAX_DURATION`.
`provisioner.trigger.node` does the same for nodes tainted `karpenter.sh/disrupted:NoSchedule`,
so the pods of draining nodes get new capacity ahead of their eviction.
`provisioner.trigger.capacitybuffer` (CapacityBuffer gate) opens a batch for every buffer and
again every 10 s: real pods that bound onto a buffer's room leave no pending pod behind, and the
next pass must launch new room for the buffer's virtual pods.
`provisioner.trigger.nodeclaim` opens a batch the moment a NodeClaim starts deleting (an
interruption, an expiry, a person): the provisioner already counts the pods of deleting nodes
as needing capacity, and waiting for the termination controller to taint the Node first would
delay their replacements by as long as that queue is deep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from karpy.apis.v1 import labels
from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.provisioner import NAME, Provisioner
from karpy.kube.builder import Builder, singleton
from karpy.kube.clock import Clock
from karpy.kube.controller import Result
from karpy.kube.informer import Informer
from karpy.state import pods as podutil

__all__ = [
    "RETRIGGER_SECONDS",
    "BufferTrigger",
    "NodeClaimTrigger",
    "NodeTrigger",
    "PodTrigger",
    "ProvisionerLoop",
    "is_disrupted",
]

RETRIGGER_SECONDS = 10.0


def is_disrupted(node: Mapping[str, Any]) -> bool:
    return any(
        t.get("key") == labels.TAINT_DISRUPTED_KEY
        and t.get("effect") == labels.TAINT_EFFECT_NO_SCHEDULE
        for t in (node.get("spec") or {}).get("taints") or ()
    )


class ProvisionerLoop:
    """`provisioner`: the singleton loop; each reconcile waits for a batch, then provisions it."""

    name: Final = NAME

    def __init__(self, provisioner: Provisioner, *, clock: Clock) -> None:
        self.provisioner = provisioner
        self.clock = clock

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    async def reconcile(self, key: str) -> Result:
        await self.provisioner.reconcile(key)
        return Result(requeue_after=0.0)


class PodTrigger:
    """`provisioner.trigger.pod`: provisionable pods open (and keep open) a batch."""

    name: Final = "provisioner.trigger.pod"

    def __init__(
        self,
        *,
        pods: Informer,
        batcher: Batcher,
        clock: Clock,
        capacity_coming: Callable[[str], bool] = lambda _key: False,
        workers: int = 10,
    ) -> None:
        self.pods = pods
        self.batcher = batcher
        self.clock = clock
        self.capacity_coming = capacity_coming
        self.workers = workers

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.pods, predicate=podutil.is_provisionable)
        builder.workers(self.workers).log_kind("Pod")

    async def reconcile(self, key: str) -> Result | None:
        pod = self.pods.get(key)
        if pod is None or not podutil.is_provisionable(pod):
            return None
        if not self.capacity_coming(key):
            self.batcher.trigger(podutil.pod_uid(pod) or key)
        return Result(requeue_after=RETRIGGER_SECONDS)


class NodeTrigger:
    """`provisioner.trigger.node`: nodes tainted as disrupted open a batch for their pods."""

    name: Final = "provisioner.trigger.node"

    def __init__(self, *, nodes: Informer, batcher: Batcher, clock: Clock) -> None:
        self.nodes = nodes
        self.batcher = batcher
        self.clock = clock

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodes, predicate=is_disrupted).workers(2).log_kind("Node")

    async def reconcile(self, key: str) -> Result | None:
        node = self.nodes.get(key)
        if node is None or not is_disrupted(node):
            return None
        self.batcher.trigger(str((node.get("metadata") or {}).get("uid") or key))
        return Result(requeue_after=RETRIGGER_SECONDS)


class BufferTrigger:
    """`provisioner.trigger.capacitybuffer`: each CapacityBuffer opens a batch now and every
    10 s, so its room is refilled once real pods took it."""

    name: Final = "provisioner.trigger.capacitybuffer"

    def __init__(self, *, buffers: Informer, batcher: Batcher, clock: Clock) -> None:
        self.buffers = buffers
        self.batcher = batcher
        self.clock = clock

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.buffers).workers(1).log_kind("CapacityBuffer")

    async def reconcile(self, key: str) -> Result | None:
        buffer = self.buffers.get(key)
        if buffer is None:
            # a deleted buffer frees its room: consolidation takes it back, nothing to launch
            return None
        self.batcher.trigger(str((buffer.get("metadata") or {}).get("uid") or key))
        return Result(requeue_after=RETRIGGER_SECONDS)


def _is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


class NodeClaimTrigger:
    """`provisioner.trigger.nodeclaim`: a NodeClaim starting to delete opens a batch, once (the
    Node's disrupted taint re-triggers while it drains)."""

    name: Final = "provisioner.trigger.nodeclaim"

    def __init__(self, *, nodeclaims: Informer, batcher: Batcher, clock: Clock) -> None:
        self.nodeclaims = nodeclaims
        self.batcher = batcher
        self.clock = clock
        self._triggered: dict[str, str] = {}
        """NodeClaim name -> the UID whose deletion already triggered."""

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclaims).workers(2).log_kind("NodeClaim")

    async def reconcile(self, key: str) -> Result | None:
        claim = self.nodeclaims.get(key)
        if claim is None or not _is_deleting(claim):
            self._triggered.pop(key, None)
            return None
        uid = str((claim.get("metadata") or {}).get("uid") or key)
        if self._triggered.get(key) != uid:
            self._triggered[key] = uid
            self.batcher.trigger(uid)
        return None
