"""karpy's own kubelet for kwok nodes: four small leader-only controllers.

The provider-specific part is a `Machines` (`machines.py`): kwok's fake instances in
`karpy run`, or another provider's instances in a test that has no kubelets (the AWS end-to-end
test plays the kubelets of moto's instances with this same simulator).

karpy does not run the upstream kwok controller (it builds, but nothing starts it); this
in-process simulator does the part of a kubelet that a real control plane and karpy's flows
depend on:

- `kwok.instance` creates a launched NodeClaim's Node once the NodeClass's registration delay
  has passed (counted from the `Launched` condition), so a restart during the delay loses
  nothing; it never recreates a Node that already registered once (a deleted Node means a
  terminated instance);
- `kwok.node` makes kwok Nodes Ready and keeps them so (also after the node lifecycle
  controller marked one Unknown while its heartbeats had stopped);
- `kwok.heartbeat` renews each kwok Node's Lease in `kube-node-lease` every 10 s and reports
  its status every 5 minutes, as a kubelet does (`heartbeat.py`), so the node lifecycle
  controller of a real cluster keeps the Node Ready;
- `kwok.pod` marks pods bound to kwok Nodes Running and Ready (PodDisruptionBudgets count only
  Ready pods) with a pod IP, and finishes the deletion of their terminating pods (a delete with
  grace period 0, as a kubelet does once containers stop).

kwok's stage conventions are honoured (`stages.py`): a pod's
`pod-delete.stage.kwok.x-k8s.io/delay` holds back the end of its deletion, and pods or Nodes
labelled `kwok.x-k8s.io/stage: unhealthy` are never made Ready.

A Node whose Lease another kubelet renews (a kwok controller managing Nodes annotated
`kwok.x-k8s.io/node: fake`, which karpy's kwok Nodes are, as Karpenter's) is left to it: no
Lease renewals, status reports, Ready patches or pod handling from here (`heartbeat.py`).

`kubelet_down` is the fault seam for tests: for a Node it names, the simulator behaves as a
dead kubelet — no Lease renewals, no status, nothing done for its pods — until it stops naming
it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog

from karpy.apis.objects import (
    format_time,
    get_condition,
    is_condition_true,
    is_deleting,
    is_node_ready,
    parse_time,
)
from karpy.apis.v1 import conditions
from karpy.cloudprovider.kwok.heartbeat import NodeHeartbeats
from karpy.cloudprovider.kwok.instances import fake_ip, node_conditions, node_for
from karpy.cloudprovider.kwok.machines import KwokMachines, Machines
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.cloudprovider.kwok.stages import DurationError, deletion_finishes_at, is_unhealthy
from karpy.kube.builder import Builder, Reconciler
from karpy.kube.cache import Cache
from karpy.kube.client import Client, PatchType
from karpy.kube.clock import Clock, RealClock
from karpy.kube.controller import Result
from karpy.kube.errors import ConflictError, NotFoundError
from karpy.kube.resources import NODES, PODS, Resource, split_key
from karpy.scheduling.resources import parse_resources

__all__ = ["KwokInstances", "KwokNodes", "KwokPods", "KwokSimulator"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.cloudprovider.kwok")


def _never(_node: str) -> bool:
    return False


class KwokSimulator:
    """The node and pod simulator; `reconcilers()` are the controllers to add on the leader.

    It plays the kubelets of `machines` (default: the kwok `provider`'s instances).
    `kubelet_down(node_name)` (tests only) says which nodes' kubelets have stopped.
    """

    def __init__(
        self,
        *,
        client: Client,
        cache: Cache,
        nodeclaims: Resource,
        provider: KwokCloudProvider | None = None,
        machines: Machines | None = None,
        clock: Clock | None = None,
        pod_workers: int = 20,
        kubelet_down: Callable[[str], bool] = _never,
    ) -> None:
        if machines is None:
            if provider is None:
                raise TypeError("KwokSimulator needs the kwok provider or the machines it plays")
            machines = KwokMachines(provider)
        self.client = client
        self.machines = machines
        self.clock = clock or RealClock()
        self.kubelet_down = kubelet_down
        self.nodes = cache.informer(NODES)
        self.pods = cache.informer(PODS)
        self.claims = cache.informer(nodeclaims)
        self.pod_workers = pod_workers
        self.heartbeats = NodeHeartbeats(
            client=client,
            nodes=self.nodes,
            clock=self.clock,
            serves=self.serves,
            kubelet_down=kubelet_down,
        )

    def serves(self, node: Mapping[str, Any] | None) -> bool:
        """Whether `node` is one of the machines' and its kubelet is played here (not by
        another kubelet that renews its Lease, such as a kwok controller)."""
        if node is None:
            return False
        if str((node.get("metadata") or {}).get("name") or "") in self.heartbeats.elsewhere:
            return False
        return self.machines.serves(str((node.get("spec") or {}).get("providerID") or ""))

    def reconcilers(self) -> list[Reconciler[str]]:
        """The simulator's controllers, to add on the leader."""
        return [KwokInstances(self), KwokNodes(self), self.heartbeats, KwokPods(self)]

    def on_kwok_node(self, pod: Mapping[str, Any]) -> bool:
        name = (pod.get("spec") or {}).get("nodeName")
        return bool(name) and self.serves(self.nodes.get(str(name)))

    # -- instances --------------------------------------------------------------------------------

    async def reconcile_instance(self, name: str) -> Result | None:
        claim = self.claims.get(name)
        if claim is None or is_deleting(claim):
            return None
        status = claim.get("status") or {}
        provider_id = str(status.get("providerID") or "")
        node_name = (
            self.machines.node_name(provider_id) if self.machines.serves(provider_id) else None
        )
        if node_name is None:
            return None
        if is_condition_true(claim, conditions.NODECLAIM_REGISTERED):
            return None  # registered once: a missing Node now means a terminated instance
        if self.nodes.get(node_name) is not None:
            return None
        launched = get_condition(claim, conditions.NODECLAIM_LAUNCHED)
        launched_at = parse_time((launched or {}).get("lastTransitionTime"))
        registration = await self.machines.registration(claim)
        if launched_at is not None:
            wait = (launched_at.timestamp() + registration.delay) - self.clock.wall().timestamp()
            if wait > 0:
                return Result(requeue_after=wait)
        meta = claim.get("metadata") or {}
        node = node_for(
            name=node_name,
            claim_uid=str(meta.get("uid") or ""),
            node_labels=dict(meta.get("labels") or {}),
            capacity=parse_resources(status.get("capacity"), field="status.capacity"),
            allocatable=parse_resources(status.get("allocatable"), field="status.allocatable"),
            now=format_time(self.clock.wall()),
            annotations=registration.annotations,
            provider_id=provider_id,
        )
        await self.machines.create_node(node)
        log.info("created simulated node", Node={"name": node_name}, NodeClaim={"name": name})
        return None

    # -- nodes ------------------------------------------------------------------------------------

    async def reconcile_node(self, name: str) -> Result | None:
        node = self.nodes.get(name)
        if node is None or not self.serves(node):
            return None
        if is_node_ready(node) or is_unhealthy(node) or self.kubelet_down(name):
            return None
        now = format_time(self.clock.wall())
        patch = {"status": {"phase": "Running", "conditions": node_conditions(now)}}
        try:
            await self.client.patch_status(NODES, name, patch, patch_type=PatchType.STRATEGIC)
        except NotFoundError:
            return None
        return None

    # -- pods -------------------------------------------------------------------------------------

    async def reconcile_pod(self, key: str) -> Result | None:
        """Play the kubelet for a pod bound to a node this simulator serves: finish a deletion
        once its kwok delete delay has passed, and report a new pod Running (Ready unless the
        pod asks to be unhealthy). Nothing happens while the node's kubelet is down."""
        pod = self.pods.get(key)
        if pod is None:
            return None
        namespace, name = split_key(key)
        meta = pod.get("metadata") or {}
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = self.nodes.get(node_name)
        if not self.serves(node) or self.kubelet_down(node_name):
            return None
        if meta.get("deletionTimestamp"):
            wait = self._deletion_wait(pod, key)
            if wait > 0:
                return Result(requeue_after=wait)
            with contextlib.suppress(NotFoundError, ConflictError):
                await self.client.delete(
                    PODS,
                    name,
                    namespace=namespace,
                    uid=str(meta.get("uid") or "") or None,
                    grace_period_seconds=0,
                )
            return None
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            return None
        unhealthy = is_unhealthy(pod)
        ready = get_condition(pod, "Ready")
        done = ready is not None and (unhealthy or ready.get("status") == "True")
        if status.get("phase") == "Running" and done:
            return None
        assert node is not None
        patch = _running_status(pod, node, unhealthy, format_time(self.clock.wall()))
        try:
            await self.client.patch_status(
                PODS, name, patch, namespace=namespace, patch_type=PatchType.STRATEGIC
            )
        except NotFoundError:
            return None
        return None

    def _deletion_wait(self, pod: Mapping[str, Any], key: str) -> float:
        """Seconds until a terminating pod's deletion may finish (its kwok delete delay)."""
        try:
            finish = deletion_finishes_at(pod)
        except DurationError as exc:
            log.warning("ignoring the pod's kwok delete delay", Pod={"key": key}, error=str(exc))
            return 0.0
        if finish is None:
            return 0.0
        return (finish - self.clock.wall()).total_seconds()


class KwokInstances:
    """`kwok.instance`: a launched NodeClaim's Node appears after the registration delay."""

    name: Final = "kwok.instance"

    def __init__(self, simulator: KwokSimulator) -> None:
        self.simulator = simulator
        self.clock = simulator.clock

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.simulator.claims).workers(4).log_kind("NodeClaim")

    async def reconcile(self, name: str) -> Result | None:
        return await self.simulator.reconcile_instance(name)


class KwokNodes:
    """`kwok.node`: kwok Nodes are made Ready and kept so."""

    name: Final = "kwok.node"

    def __init__(self, simulator: KwokSimulator) -> None:
        self.simulator = simulator
        self.clock = simulator.clock

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.simulator.nodes, predicate=self.simulator.serves).workers(4).log_kind(
            "Node"
        )

    async def reconcile(self, name: str) -> Result | None:
        return await self.simulator.reconcile_node(name)


class KwokPods:
    """`kwok.pod`: pods bound to kwok Nodes run, and their deletions finish."""

    name: Final = "kwok.pod"

    def __init__(self, simulator: KwokSimulator) -> None:
        self.simulator = simulator
        self.clock = simulator.clock

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.simulator.pods, predicate=self.simulator.on_kwok_node)
        builder.workers(self.simulator.pod_workers).log_kind("Pod")

    async def reconcile(self, key: str) -> Result | None:
        return await self.simulator.reconcile_pod(key)


def _running_status(
    pod: Mapping[str, Any], node: Mapping[str, Any], unhealthy: bool, now: str
) -> dict[str, Any]:
    """The status patch a kubelet would write for a started pod: the node's IP as host IP, a
    fake pod IP (the node's for host-network pods), every container started, and Ready False
    for a pod that asks to be unhealthy."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    node_name = str((node.get("metadata") or {}).get("name") or "")
    key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    node_ip = next(
        (
            a.get("address")
            for a in (node.get("status") or {}).get("addresses") or ()
            if a.get("type") == "InternalIP"
        ),
        fake_ip(node_name),
    )
    pod_ip = (
        node_ip
        if (pod.get("spec") or {}).get("hostNetwork")
        else fake_ip(str(meta.get("uid") or key), second_base=128)
    )
    ready_status = "False" if unhealthy else "True"
    # An unhealthy pod runs, but its readiness never passes (kwok's unhealthy stage).
    not_ready = {"reason": "ContainersNotReady"} if unhealthy else {}
    containers = [
        {
            "name": c.get("name"),
            "ready": not unhealthy,
            "started": True,
            "restartCount": 0,
            "image": c.get("image") or "kwok",
            "imageID": "",
            "state": {"running": {"startedAt": now}},
        }
        for c in (pod.get("spec") or {}).get("containers") or ()
    ]
    return {
        "status": {
            "phase": "Running",
            "hostIP": node_ip,
            "hostIPs": [{"ip": node_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": status.get("startTime") or now,
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": now}
                for t in ("PodReadyToStartContainers", "Initialized", "PodScheduled")
            ]
            + [
                {"type": t, "status": ready_status, "lastTransitionTime": now, **not_ready}
                for t in ("ContainersReady", "Ready")
            ],
            "containerStatuses": containers,
        }
    }
