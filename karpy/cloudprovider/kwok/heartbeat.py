"""The kubelet's heartbeats for kwok nodes: the node Lease and the node status report.

A kubelet keeps its Node alive in two ways, and kube-controller-manager's node lifecycle
controller watches both:

- it renews a Lease named after the Node in `kube-node-lease` every 10 s, a quarter of the
  Lease's 40 s duration (`nodeLeaseDurationSeconds`); the controller marks a Node whose Lease
  (and status) went stale for `--node-monitor-grace-period` NotReady, taints it
  `node.kubernetes.io/unreachable` and has its pods evicted;
- it posts its status when something changed and at least every 5 minutes
  (`nodeStatusReportFrequency`), which refreshes each condition's `lastHeartbeatTime`.

`NodeHeartbeats` does both for every kwok Node, as long as the Node (the instance) exists. It is
one singleton controller that ticks every second. Each node has a fixed phase within the 10 s
period (a hash of its name), so renewals are batched per tick and spread over the period: with
a thousand nodes about a hundred go per tick, not a thousand at once. A node seen for the first
time (a new instance, or every node after a change of leader) is renewed at the next tick, as a
kubelet creates its Lease when it starts. Renewals of one tick run concurrently, bounded.

Another kubelet may play a kwok Node: a kwok controller that manages Nodes annotated
`kwok.x-k8s.io/node: fake` (as Karpenter's kwok development setup runs one) renews their Leases
too. Two renewers of one Lease would fight over it, so karpy stands back from a Node whose
Lease someone else renews: when it first sees the Node, a fresh Lease held by another identity;
later, a Lease whose `renewTime` is no longer the one karpy wrote (each renewal is a JSON patch
that tests it). Such a Node is in `elsewhere`, and the simulator leaves it, its status and its
pods to that kubelet.

A Node whose kubelet is down (`kubelet_down`, the simulator's fault seam for tests) gets no
renewals and no status reports; one labelled `kwok.x-k8s.io/stage: unhealthy` keeps its Lease
but no status report, so conditions a test injected stay as they are (kwok's no-op stage).
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

import structlog

from karpy.apis.objects import format_time, is_condition_true, parse_time
from karpy.cloudprovider.kwok.stages import is_unhealthy
from karpy.kube.builder import Builder, singleton
from karpy.kube.client import Client, PatchType
from karpy.kube.clock import Clock
from karpy.kube.controller import Result
from karpy.kube.errors import (
    AlreadyExistsError,
    InvalidError,
    KubeError,
    NotFoundError,
    OutcomeUnknownError,
)
from karpy.kube.informer import Informer
from karpy.kube.resources import LEASES, NODES

__all__ = [
    "LEASE_DURATION_SECONDS",
    "LEASE_NAMESPACE",
    "RENEW_INTERVAL",
    "STATUS_REPORT_INTERVAL",
    "NodeHeartbeats",
    "node_lease",
]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.cloudprovider.kwok")

LEASE_NAMESPACE: Final = "kube-node-lease"
LEASE_DURATION_SECONDS: Final = 40
"""The kubelet's default `nodeLeaseDurationSeconds`."""
RENEW_INTERVAL: Final = LEASE_DURATION_SECONDS * 0.25
"""The kubelet renews its Lease every quarter of its duration: 10 s."""
STATUS_REPORT_INTERVAL: Final = 300.0
"""The kubelet's default `nodeStatusReportFrequency` when it renews a Lease: 5 minutes."""
TICK: Final = 1.0
_RENEWED: Final = "renewed"
_FAILED: Final = "failed"
_SKIPPED: Final = "skipped"
_KUBELET_CONDITIONS: Final = frozenset({"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"})


def micro_time(moment: datetime) -> str:
    """metav1.MicroTime's wire format (a Lease's `renewTime`)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_lease(*, name: str, uid: str, renew_time: str) -> JSON:
    """The Lease a kubelet keeps for its Node: held by the node, owned by the Node object (so
    the garbage collector removes it with the Node)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": renew_time,
        },
    }


def _phase(name: str, period: float) -> float:
    """A node's fixed offset within a period, from its name (stable across restarts)."""
    return (zlib.crc32(name.encode()) / 2**32) * period


class NodeHeartbeats:
    """Renews the Lease of every kwok Node every 10 s and reports its status every 5 minutes.

    `controller` is the leader-only runnable; `tick()` is one pass (tests call it with a fake
    clock). `serves(node)` says which Nodes are kwok instances; `kubelet_down(name)` stops a
    node's heartbeats.
    """

    name: Final = "kwok.heartbeat"

    def __init__(
        self,
        *,
        client: Client,
        nodes: Informer,
        clock: Clock,
        serves: Callable[[Mapping[str, Any]], bool],
        kubelet_down: Callable[[str], bool],
        concurrency: int = 32,
    ) -> None:
        self.client = client
        self.nodes = nodes
        self.clock = clock
        self.serves = serves
        self.kubelet_down = kubelet_down
        self._limit = asyncio.Semaphore(concurrency)
        self._renewed: dict[str, float] = {}
        self._reported: dict[str, float] = {}
        self._wrote: dict[str, str] = {}
        self.elsewhere: set[str] = set()
        """Nodes whose Lease another kubelet renews: the simulator leaves them alone."""

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    async def reconcile(self, _key: str) -> Result:
        await self.tick()
        return Result(requeue_after=TICK)

    def _lease_due(self, name: str, now: float) -> bool:
        last = self._renewed.get(name)
        if last is None:
            return True
        if now - last < RENEW_INTERVAL / 2:
            return False
        phase = _phase(name, RENEW_INTERVAL)
        return (now - phase) // RENEW_INTERVAL > (last - phase) // RENEW_INTERVAL

    def _status_due(self, name: str, now: float) -> bool:
        last = self._reported.get(name)
        if last is None:
            # First sight (a new node, or a new leader): the node's last report is not known,
            # so the first one falls somewhere in the next interval, spread by name.
            last = now - _phase(name, STATUS_REPORT_INTERVAL)
            self._reported[name] = last
        return now - last >= STATUS_REPORT_INTERVAL

    async def tick(self) -> int:
        """Renew the Leases (and report the status) due now; returns how many were renewed."""
        now = self.clock.now()
        due: list[tuple[Mapping[str, Any], bool]] = []
        present: set[str] = set()
        every: set[str] = set()
        for node in self.nodes.list():
            every.add(str((node.get("metadata") or {}).get("name") or ""))
            if not self.serves(node):
                continue
            name = str((node.get("metadata") or {}).get("name") or "")
            present.add(name)
            if self.kubelet_down(name) or not self._lease_due(name, now):
                continue
            report = (
                self._status_due(name, now)
                and not is_unhealthy(node)
                and is_condition_true(node, "Ready")
            )
            due.append((node, report))
        for gone in [n for n in self._renewed if n not in present]:
            del self._renewed[gone]
            self._reported.pop(gone, None)
            self._wrote.pop(gone, None)
        self.elsewhere &= every
        if not due:
            return 0
        outcomes = await asyncio.gather(*(self._beat(node, report, now) for node, report in due))
        failed = outcomes.count(_FAILED)
        if failed:
            log.warning("renewing kwok node leases failed; retrying", failed=failed, due=len(due))
        return outcomes.count(_RENEWED)

    async def _beat(self, node: Mapping[str, Any], report: bool, now: float) -> str:
        """One node's heartbeat: _RENEWED, _FAILED, or _SKIPPED (the Node is gone, or another
        kubelet has it)."""
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        async with self._limit:
            try:
                if not await self._renew(name, str(meta.get("uid") or "")):
                    return _SKIPPED
                self._renewed[name] = now
                if report:
                    await self._report(node)
                    self._reported[name] = now
            except NotFoundError:
                return _SKIPPED
            except KubeError as exc:
                log.debug("kwok node heartbeat failed", Node={"name": name}, error=str(exc))
                return _FAILED
        return _RENEWED

    async def _renew(self, name: str, uid: str) -> bool:
        """Renew (or create) the node's Lease; False when another kubelet renews it."""
        renew_time = micro_time(self.clock.wall())
        spec = {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": renew_time,
        }
        last = self._wrote.get(name)
        try:
            if last is None:
                current = await self.client.get(LEASES, name, namespace=LEASE_NAMESPACE)
                if self._held_elsewhere(current, name):
                    return self._stand_back(name, current)
                await self.client.patch(LEASES, name, {"spec": spec}, namespace=LEASE_NAMESPACE)
            else:
                await self.client.patch(
                    LEASES,
                    name,
                    [
                        {"op": "test", "path": "/spec/renewTime", "value": last},
                        *({"op": "add", "path": f"/spec/{k}", "value": v} for k, v in spec.items()),
                    ],
                    namespace=LEASE_NAMESPACE,
                    patch_type=PatchType.JSON,
                )
            self._wrote[name] = renew_time
            return True
        except InvalidError:
            # The test failed: renewed since our last write. By a retry of our own write, or
            # by another kubelet.
            current = await self.client.get(LEASES, name, namespace=LEASE_NAMESPACE)
            held = str(((current.get("spec") or {}).get("renewTime")) or "")
            if held == renew_time:
                self._wrote[name] = renew_time
                return True
            return self._stand_back(name, current)
        except NotFoundError:
            pass
        lease = node_lease(name=name, uid=uid, renew_time=renew_time)
        # Created meanwhile, or maybe by us: the next renewal looks again.
        with contextlib.suppress(AlreadyExistsError, OutcomeUnknownError):
            await self.client.create(LEASES, lease, namespace=LEASE_NAMESPACE)
            self._wrote[name] = renew_time
        return True

    def _held_elsewhere(self, lease: Mapping[str, Any], name: str) -> bool:
        """A Lease another identity renewed within its duration."""
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        renewed = parse_time(spec.get("renewTime"))
        if holder in ("", name) or renewed is None:
            return False
        duration = float(spec.get("leaseDurationSeconds") or LEASE_DURATION_SECONDS)
        return (self.clock.wall() - renewed).total_seconds() < duration

    def _stand_back(self, name: str, lease: Mapping[str, Any]) -> bool:
        self.elsewhere.add(name)
        self._wrote.pop(name, None)
        spec = lease.get("spec") or {}
        log.info(
            "another kubelet renews this kwok node's Lease; leaving the node to it",
            Node={"name": name},
            holder=spec.get("holderIdentity"),
            renewTime=spec.get("renewTime"),
        )
        return False

    async def _report(self, node: Mapping[str, Any]) -> None:
        """Refresh the heartbeat of the kubelet's conditions, as its periodic status report."""
        now = format_time(self.clock.wall())
        conditions = [
            {"type": c.get("type"), "lastHeartbeatTime": now}
            for c in (node.get("status") or {}).get("conditions") or ()
            if c.get("type") in _KUBELET_CONDITIONS
        ]
        if not conditions:
            return
        name = str((node.get("metadata") or {}).get("name") or "")
        await self.client.patch_status(
            NODES, name, {"status": {"conditions": conditions}}, patch_type=PatchType.STRATEGIC
        )
