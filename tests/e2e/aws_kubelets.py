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

    def __enter__(self) -> Kubelets:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        client = await Client.connect(kubeconfig=self.kubeconfig)
        cache = Cache(client)
        claims = cache.informer(NODECLAIMS)
        nodes = cache.informer(NODES)
        kubelet = FakeKubelet(client, cache.informer(PODS))
        stop = asyncio.Event()
        task = asyncio.create_task(cache.start(stop))
        await cache.wait_for_sync()
        beats: dict[str, float] = {}
        try:
            while not self._stop.is_set():
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
                    try:
                        await self._register(client, name, claim)
                    except KubeError as exc:
                        self.errors.append(f"registering {name}: {exc}")
                        kubelet.nodes.discard(name)
                now = time.monotonic()
                for name in list(kubelet.nodes):
                    if nodes.get(name) is None or now - beats.get(name, 0.0) < HEARTBEAT_SECONDS:
                        continue
                    beats[name] = now
                    with contextlib.suppress(KubeError):
                        await self._ready(client, name, None)
                await asyncio.sleep(0.3)
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
