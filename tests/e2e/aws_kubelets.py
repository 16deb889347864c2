"""Stand-in kubelets for the EC2 instances `karpy run` launches against moto (which runs none),
in a thread with its own event loop: a Node for every launched NodeClaim (providerID, labels,
capacity, Ready, heartbeats renewed so the node lifecycle controller keeps it Ready), pods bound
to those Nodes Running and Ready, and pods being deleted finished at once."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

from kubetest import now_rfc3339

from karpy.apis.descriptors import NODECLAIMS
from karpy.kube import NODES, PODS, Cache, Client, KubeError
from tests.integration.termination.support import FakeKubelet

__all__ = ["Kubelets"]

JSON = dict[str, Any]
HEARTBEAT_SECONDS = 10.0


class Kubelets:
    """The kubelets of the EC2 instances karpy launches, in a thread with its own loop."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelets", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._informers: dict[str, Any] = {}

    def __enter__(self) -> Kubelets:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        asyncio.run(self._main())

    def listed(self, resource: str) -> list[JSON]:
        """A copy of what the kubelets' watch of `resource` ("nodeclaims", "pods") holds now,
        read on their loop: a probe that costs the API server nothing."""
        loop, informer = self._loop, self._informers.get(resource)
        if loop is None or informer is None:
            raise RuntimeError("the kubelets have not started")

        async def read() -> list[JSON]:
            return list(informer.list())

        return asyncio.run_coroutine_threadsafe(read(), loop).result(timeout=30)

    async def _main(self) -> None:
        client = await Client.connect(kubeconfig=self.kubeconfig)
        cache = Cache(client)
        claims = cache.informer(NODECLAIMS)
        nodes = cache.informer(NODES)
        pods = cache.informer(PODS)
        kubelet = FakeKubelet(client, pods)
        self._informers = {"nodeclaims": claims, "pods": pods}
        self._loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        task = asyncio.create_task(cache.start(stop))
        await cache.wait_for_sync()
        beats: dict[str, float] = {}
        beating: asyncio.Task[None] | None = None

        async def register(name: str, claim: JSON) -> None:
            try:
                await self._register(client, name, claim)
            except KubeError as exc:
                self.errors.append(f"registering {name}: {exc}")
                kubelet.nodes.discard(name)

        async def beat(due: list[str]) -> None:
            async def one(name: str) -> None:
                with contextlib.suppress(KubeError):
                    await self._ready(client, name, None)

            await asyncio.gather(*(one(n) for n in due))

        try:
            while not self._stop.is_set():
                # Each instance's kubelet registers on its own: all at once, not one by one.
                new: list[tuple[str, JSON]] = []
                for claim in claims.list():
                    provider_id = str((claim.get("status") or {}).get("providerID") or "")
                    if not provider_id.startswith("aws:///") or claim["metadata"].get(
                        "deletionTimestamp"
                    ):
                        continue
                    name = f"ip-{provider_id.rsplit('/', 1)[-1]}.ec2.internal"
                    if name in kubelet.nodes:
                        continue
                    kubelet.nodes.add(name)
                    new.append((name, claim))
                if new:
                    await asyncio.gather(*(register(n, c) for n, c in new))
                # Heartbeats run beside registration, so a round of them never delays a node.
                if beating is None or beating.done():
                    now = time.monotonic()
                    due = [
                        n
                        for n in kubelet.nodes
                        if nodes.get(n) is not None and now - beats.get(n, 0.0) >= HEARTBEAT_SECONDS
                    ]
                    for name in due:
                        beats[name] = now
                    if due:
                        beating = asyncio.create_task(beat(due))
                await asyncio.sleep(0.3)
            if beating is not None:
                await beating
        finally:
            await kubelet.close()
            stop.set()
            await task
            await client.close()

    async def _register(self, client: Client, name: str, claim: JSON) -> None:
        status = claim["status"]
        await client.create(
            NODES,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {**claim["metadata"]["labels"], "kubernetes.io/hostname": name},
                },
                "spec": {
                    "providerID": status["providerID"],
                    "taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
                },
            },
        )
        await self._ready(client, name, status)

    async def _ready(self, client: Client, name: str, status: JSON | None) -> None:
        stamp = now_rfc3339()
        patch: JSON = {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            ]
        }
        if status is not None:
            patch["capacity"] = status["capacity"]
            patch["allocatable"] = status["allocatable"]
        await client.patch_status(NODES, name, {"status": patch})
