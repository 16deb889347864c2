"""Support for the termination tests: a recording cloud double, a stand-in kubelet, builders of
managed Nodes and NodeClaims, and an environment that runs the termination controllers in-process
against the session's real control plane.

The cloud double implements the `CloudProvider` protocol with a dict of instances (a seam, not a
mock of Kubernetes). The stand-in kubelet does what kubelets do for the fake Nodes of these
tests: pods bound to them turn Running and Ready (PodDisruptionBudgets count only Ready pods) and
pods being deleted are finished off.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubetest import now_rfc3339, ready_node

from karpy.apis.objects import format_time
from karpy.apis.v1 import NodeClaim, NodePool
from karpy.cloudprovider.types import NodeClaimNotFoundError, RepairPolicy
from karpy.controllers.common.objects import NODECLAIMS
from karpy.controllers.node.termination import EvictionQueue, NodeTerminationController
from karpy.controllers.nodeclaim.termination import NodeClaimTermination
from karpy.kube import (
    NODES,
    PODS,
    Client,
    Clock,
    EventRecorder,
    HandlerFuncs,
    Informer,
    KubeError,
    NotFoundError,
    RealClock,
    Resource,
)
from karpy.kube.resources import EVENTS, PERSISTENTVOLUMECLAIMS, VOLUMEATTACHMENTS
from karpy.scheduling.instancetypes import InstanceType
from tests.integration.support import ControllerEnv
from tests.kit import claim_spec, ready_claim_conditions

JSON = dict[str, Any]
FINALIZER = "karpenter.sh/termination"
POOL = "term-pool"
NODE_MEMORY = "32Gi"


# -- the cloud double -------------------------------------------------------------------------


@dataclass
class FakeCloud:
    """Instances in a dict; `delete` terminates at once unless `terminating_calls` says how many
    deletes an instance answers "still terminating" before it is gone."""

    name: str = "test"
    instances: dict[str, NodeClaim] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    terminating_calls: int = 0
    _pending: dict[str, int] = field(default_factory=dict)

    def add(
        self, provider_id: str, *, claim_name: str, age: timedelta | None = timedelta(0)
    ) -> None:
        """An instance launched `age` ago (None: the cloud reports no launch time)."""
        meta: JSON = {"name": claim_name}
        if age is not None:
            meta["creationTimestamp"] = format_time(datetime.now(UTC) - age)
        self.instances[provider_id] = NodeClaim.model_validate(
            {"metadata": meta, "spec": claim_spec(), "status": {"providerID": provider_id}}
        )

    async def create(self, claim: NodeClaim) -> NodeClaim:
        raise AssertionError("the termination tests never launch")

    async def delete(self, claim: NodeClaim) -> None:
        provider_id = claim.status.provider_id if claim.status else ""
        self.calls.append(("delete", provider_id or ""))
        if provider_id not in self.instances:
            raise NodeClaimNotFoundError(f"{provider_id} not found")
        left = self._pending.setdefault(provider_id, self.terminating_calls)
        if left > 0:
            self._pending[provider_id] = left - 1
            return
        del self.instances[provider_id]
        raise NodeClaimNotFoundError(f"{provider_id} terminated")

    async def get(self, provider_id: str) -> NodeClaim:
        self.calls.append(("get", provider_id))
        try:
            return self.instances[provider_id]
        except KeyError:
            raise NodeClaimNotFoundError(f"{provider_id} not found") from None

    async def list(self) -> builtins.list[NodeClaim]:
        self.calls.append(("list", ""))
        return list(self.instances.values())

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        return []

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        return None

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return []

    def deletes(self, provider_id: str) -> int:
        return sum(1 for call, pid in self.calls if call == "delete" and pid == provider_id)


# -- builders ---------------------------------------------------------------------------------


def volume_attachment(name: str, *, node: str, pv: str) -> JSON:
    """A CSI VolumeAttachment of PersistentVolume `pv` to `node` (no driver acts on it)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {
            "attacher": "test.csi.karpy.dev",
            "nodeName": node,
            "source": {"persistentVolumeName": pv},
        },
    }


# -- the stand-in kubelet ---------------------------------------------------------------------


class FakeKubelet:
    """Plays the kubelet for the nodes in `nodes`: bound pods become Running and Ready, pods being
    deleted are removed (grace 0) after `finish_after` seconds."""

    def __init__(self, client: Client, pods: Informer, *, finish_after: float = 0.0) -> None:
        self.client = client
        self.pods = pods
        self.nodes: set[str] = set()
        self.finish_after = finish_after
        self._busy: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        pods.add_handler(HandlerFuncs(add=self._seen, update=lambda _old, new: self._seen(new)))

    def _seen(self, obj: JSON) -> None:
        if (obj.get("spec") or {}).get("nodeName") not in self.nodes:
            return
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        if key in self._busy:
            return
        deleting = bool(obj["metadata"].get("deletionTimestamp"))
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (obj.get("status") or {}).get("conditions") or ()
        )
        if deleting or not ready:
            self._busy.add(key)
            task = asyncio.get_running_loop().create_task(self._act(key, obj, deleting))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _act(self, key: str, obj: JSON, deleting: bool) -> None:
        namespace, name = key.split("/", 1)
        try:
            if deleting:
                await asyncio.sleep(self.finish_after)
                await self.client.delete(
                    PODS,
                    name,
                    namespace=namespace,
                    grace_period_seconds=0,
                    uid=obj["metadata"]["uid"],
                )
            else:
                stamp = now_rfc3339()
                conditions = [
                    {"type": t, "status": "True", "lastTransitionTime": stamp}
                    for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
                ]
                await self.client.patch_status(
                    PODS,
                    name,
                    {"status": {"phase": "Running", "conditions": conditions, "startTime": stamp}},
                    namespace=namespace,
                )
        except KubeError:
            pass
        finally:
            self._busy.discard(key)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


# -- the environment --------------------------------------------------------------------------


@dataclass(kw_only=True)
class Env(ControllerEnv):
    """The shared environment with the cloud double, the stand-in kubelet, and the termination
    controllers."""

    namespace: str
    cloud: FakeCloud = field(default_factory=FakeCloud)
    kubelet: FakeKubelet | None = None
    events: EventRecorder | None = None

    async def start_kubelet(self, *, finish_after: float = 0.0) -> FakeKubelet:
        self.kubelet = FakeKubelet(
            self.client, await self.informer(PODS), finish_after=finish_after
        )
        return self.kubelet

    async def start_termination(
        self, *, clock: Clock | None = None, min_drain_time: float = 0.5
    ) -> tuple[NodeTerminationController, NodeClaimTermination, EvictionQueue]:
        """Run node.termination, eviction-queue and nodeclaim.termination with `self.cloud`."""
        clock = clock or RealClock()
        nodes = await self.informer(NODES)
        pods = await self.informer(PODS)
        claims = await self.informer(NODECLAIMS)
        attachments = await self.informer(VOLUMEATTACHMENTS)
        pvcs = await self.informer(PERSISTENTVOLUMECLAIMS)
        self.events = EventRecorder(self.client)
        self.run(self.events)
        queue = EvictionQueue(
            client=self.client, pods=pods, nodes=nodes, events=self.events, clock=clock
        )
        node_termination = NodeTerminationController(
            client=self.client,
            nodes=nodes,
            nodeclaims=claims,
            pods=pods,
            volume_attachments=attachments,
            claims=pvcs,
            cloud_provider=self.cloud,
            events=self.events,
            eviction_queue=queue,
            clock=clock,
            min_drain_time=min_drain_time,
        )
        claim_termination = NodeClaimTermination(
            client=self.client,
            nodeclaims=claims,
            nodes=nodes,
            cloud_provider=self.cloud,
            clock=clock,
        )
        for runnable in (queue, node_termination, claim_termination):
            self.run(runnable)
        return node_termination, claim_termination, queue

    async def managed_node(
        self,
        name: str,
        *,
        grace_period: str | None = None,
        cpu: str = "8",
        register_instance: bool = True,
    ) -> tuple[JSON, JSON]:
        """A Ready Node and its registered NodeClaim, both with the termination finalizer, and
        the instance in the cloud double."""
        provider_id = f"test://{name}"
        manifest, status = ready_node(
            name,
            cpu=cpu,
            memory=NODE_MEMORY,
            labels={"karpenter.sh/nodepool": POOL, "topology.kubernetes.io/zone": "test-zone-a"},
        )
        manifest["metadata"]["finalizers"] = [FINALIZER]
        manifest["spec"]["providerID"] = provider_id
        node = await self.client.create(NODES, manifest)
        await self.client.patch_status(NODES, name, status)
        extra: JSON = {"terminationGracePeriod": grace_period} if grace_period else {}
        await self.client.create(
            NODECLAIMS,
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": name,
                    "labels": {"karpenter.sh/nodepool": POOL},
                    "finalizers": [FINALIZER],
                },
                "spec": claim_spec(**extra),
            },
        )
        claim = await self.client.patch_status(
            NODECLAIMS,
            name,
            {
                "status": {
                    "providerID": provider_id,
                    "nodeName": name,
                    "conditions": ready_claim_conditions(now_rfc3339()),
                }
            },
        )
        if register_instance:
            self.cloud.add(provider_id, claim_name=name)
        if self.kubelet is not None:
            self.kubelet.nodes.add(name)
        return node, claim

    async def plain_node(self, name: str, *, cpu: str = "8") -> None:
        """A Ready node karpy does not manage (somewhere for replacement pods to go)."""
        manifest, status = ready_node(name, cpu=cpu, memory=NODE_MEMORY)
        await self.client.create(NODES, manifest)
        await self.client.patch_status(NODES, name, status)
        if self.kubelet is not None:
            self.kubelet.nodes.add(name)

    async def gone(self, resource: Resource, name: str, namespace: str | None = None) -> bool:
        try:
            await self.client.get(resource, name, namespace=namespace)
        except NotFoundError:
            return True
        return False

    async def events_for(
        self, obj: str | JSON, reason: str, namespace: str = "default"
    ) -> list[JSON]:
        """Events with `reason` about `obj` (a name, or an object: then only for its UID)."""
        name = obj if isinstance(obj, str) else obj["metadata"]["name"]
        uid = None if isinstance(obj, str) else obj["metadata"]["uid"]
        found = await self.client.list(
            EVENTS, namespace=namespace, field_selector={"involvedObject.name": name}
        )
        return [
            e
            for e in found.items
            if e.get("reason") == reason and (uid is None or e["involvedObject"].get("uid") == uid)
        ]

    async def close(self) -> None:
        """Flush the events recorded so far, stop the controllers, then the kubelet."""
        self._stop.set()
        if self.events is not None:
            with contextlib.suppress(Exception):
                await self.events.flush()
        await super().close()
        if self.kubelet is not None:
            await self.kubelet.close()


def condition(obj: JSON, type_: str) -> JSON | None:
    for found in (obj.get("status") or {}).get("conditions") or ():
        if found.get("type") == type_:
            return dict(found)
    return None


def names(items: Iterable[JSON]) -> set[str]:
    return {item["metadata"]["name"] for item in items}
