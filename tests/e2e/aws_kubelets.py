"""Stand-in kubelets for the EC2 instances `karpy run` launches against moto (which runs none):
karpy's kwok simulator, given `EC2Machines` instead of kwok's fake instances, in a thread with
its own event loop and controller manager. It registers a Node for every launched NodeClaim
(the instance's providerID, the NodeClaim's labels and capacity, Ready), renews its Lease and
status so the node lifecycle controller keeps it Ready, runs the pods bound to it and finishes
their deletions: the same code that plays kwok's kubelets in `karpy run`."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from karpy.apis.descriptors import NODECLAIMS
from karpy.cloudprovider.kwok.instances import ANNOTATION_KWOK_NODE, KWOK_NODE_FAKE
from karpy.cloudprovider.kwok.machines import Machines, Registration
from karpy.cloudprovider.kwok.simulator import KwokSimulator
from karpy.kube import NODES, PODS, AlreadyExistsError, Client, KubeError
from karpy.kube.builder import build
from karpy.kube.manager import Manager, ManagerOptions

__all__ = ["EC2Machines", "Kubelets", "RecordingMachines", "node_name"]

JSON = dict[str, Any]
PROVIDER_ID_PREFIX = "aws:///"


def node_name(provider_id: str) -> str:
    """The Node name the instance's kubelet registers (`ip-<instance id>.ec2.internal`)."""
    return f"ip-{provider_id.rsplit('/', 1)[-1]}.ec2.internal"


class EC2Machines:
    """EC2 instances (`aws:///<zone>/<id>`) as the simulator's `Machines`: registered at
    once, created straight through the API; failures other than a repeat are recorded."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.errors: list[str] = []

    def serves(self, provider_id: str) -> bool:
        return provider_id.startswith(PROVIDER_ID_PREFIX)

    def node_name(self, provider_id: str) -> str | None:
        return node_name(provider_id) if self.serves(provider_id) else None

    async def registration(self, claim: Mapping[str, Any]) -> Registration:
        # Marked as a simulated kubelet's Node, as kwok's are: the session's stand-in for
        # static Nodes' kubelets (`NodeLeases`) then leaves its Lease to this simulator.
        return Registration(annotations={ANNOTATION_KWOK_NODE: KWOK_NODE_FAKE})

    async def create_node(self, node: JSON) -> None:
        try:
            await self.client.create(NODES, node)
        except AlreadyExistsError:
            pass
        except KubeError as exc:
            self.errors.append(f"registering {node['metadata']['name']}: {exc}")
            raise


class RecordingMachines(Machines, Protocol):
    """A simulator's `Machines` that records the Node registrations the apiserver refused."""

    errors: list[str]


class Kubelets:
    """`with Kubelets(kubeconfig) as kubelets:` plays the instances' kubelets until the block
    ends; `errors` lists Node registrations the apiserver refused. `machines` says whose
    instances they are (EC2's by default)."""

    def __init__(
        self,
        kubeconfig: str,
        *,
        machines: Callable[[Client], RecordingMachines] = EC2Machines,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.machines = machines
        self.errors: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._manager: Manager | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelets", daemon=True)

    def __enter__(self) -> Kubelets:
        self._thread.start()
        self._started.wait(60)
        return self

    def __exit__(self, *_: object) -> None:
        if self._loop is not None and self._manager is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                self._loop.call_soon_threadsafe(self._manager.stop)
        self._thread.join(timeout=60)

    def listed(self, resource: str) -> list[JSON]:
        """A copy of what the kubelets' watch of `resource` ("nodeclaims", "pods") holds now,
        read on their loop: a probe that costs the API server nothing."""
        loop, manager = self._loop, self._manager
        if loop is None or manager is None:
            raise RuntimeError("the kubelets have not started")
        watched = {"nodeclaims": NODECLAIMS, "pods": PODS}[resource]

        async def read() -> list[JSON]:
            return [dict(o) for o in manager.cache.informer(watched).list()]

        return asyncio.run_coroutine_threadsafe(read(), loop).result(timeout=30)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            self._started.set()

    async def _main(self) -> None:
        client = await Client.connect(kubeconfig=self.kubeconfig)
        manager = Manager(
            client=client,
            options=ManagerOptions(metrics_port=None, health_probe_port=None, handle_signals=False),
        )
        machines = self.machines(client)
        machines.errors = self.errors
        simulator = KwokSimulator(
            client=client,
            cache=manager.cache,
            machines=machines,
            nodeclaims=NODECLAIMS,
            clock=manager.clock,
        )
        for reconciler in simulator.reconcilers():
            manager.add(build(reconciler))
        self._loop = asyncio.get_running_loop()
        self._manager = manager
        self._started.set()
        try:
            await manager.run()
        finally:
            await client.close()
