"""The kwok simulator's kubelet heartbeats at scale: 1,000 kwok nodes on a private control plane
whose node lifecycle controller uses Kubernetes' default timing (NotReady after 50 s without a
Lease renewal).

Case `heartbeats-1000`: the nodes are created, then `NodeHeartbeats` (as the simulator runs it,
on a client with karpy's default budget of 200 QPS, burst 300) renews their Leases for
`WINDOW` seconds. Reported: renewals per second (goal: 100, one per node every 10 s), the
longest gap between two renewals of one node (goal: well under the 40 s Lease and the 50 s grace
period), status reports, the process's CPU use, the event loop's p99 lag, and how many nodes
the node lifecycle controller did not keep Ready (goal: 0).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvloop

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "hack") not in sys.path:
    sys.path.insert(0, str(REPO / "hack"))

import controlplane  # noqa: E402

from karpy.apis.objects import format_time  # noqa: E402
from karpy.cloudprovider.kwok.heartbeat import NodeHeartbeats  # noqa: E402
from karpy.cloudprovider.kwok.instances import PROVIDER_ID_PREFIX, node_for  # noqa: E402
from karpy.kube import NODES, Cache, Client, RealClock  # noqa: E402
from karpy.kube.offload import LoopLagMonitor  # noqa: E402

NODE_COUNT = int(os.environ.get("BENCH_KUBELET_NODES", "1000"))
WINDOW = float(os.environ.get("BENCH_KUBELET_WINDOW", "90"))
CAPACITY = {"cpu": 4000, "memory": 16 * 1024**3, "pods": 110}


def _is_kwok(node: Any) -> bool:
    return str((node.get("spec") or {}).get("providerID") or "").startswith(PROVIDER_ID_PREFIX)


async def _create_nodes(client: Client, count: int) -> None:
    limit = asyncio.Semaphore(32)
    now = format_time(RealClock().wall())

    async def one(i: int) -> None:
        node = node_for(
            name=f"kwok-{i:04d}",
            claim_uid=f"uid-{i}",
            node_labels={"topology.kubernetes.io/zone": f"test-zone-{'abcd'[i % 4]}"},
            capacity=CAPACITY,
            allocatable=CAPACITY,
            now=now,
        )
        node["spec"]["taints"] = []
        async with limit:
            await client.create(NODES, node)

    await asyncio.gather(*(one(i) for i in range(count)))


async def _run(kubeconfig: str) -> dict[str, Any]:
    client = await Client.connect(kubeconfig=kubeconfig, qps=200, burst=300)
    try:
        await _create_nodes(client, NODE_COUNT)
        cache = Cache(client)
        nodes = cache.informer(NODES)
        stop = asyncio.Event()
        cache_task = asyncio.create_task(cache.start(stop))
        await cache.wait_for_sync()
        beats = NodeHeartbeats(
            client=client,
            nodes=nodes,
            clock=RealClock(),
            serves=_is_kwok,
            kubelet_down=lambda _name: False,
        )
        monitor = LoopLagMonitor(interval=0.01, warn_threshold=10.0)
        lag_task = asyncio.create_task(monitor.run())
        await beats.tick()  # every node is new: one full pass first
        renewed_at = dict(beats._renewed)
        gaps: list[float] = []
        renewals = 0
        started, cpu_started = time.monotonic(), time.process_time()
        while time.monotonic() - started < WINDOW:
            renewals += await beats.tick()
            for name, at in beats._renewed.items():
                last = renewed_at.get(name)
                if last is not None and at != last:
                    gaps.append(at - last)
                renewed_at[name] = at
            await asyncio.sleep(1.0)
        seconds = time.monotonic() - started
        cpu = time.process_time() - cpu_started
        reported = sum(1 for at in beats._reported.values() if at >= started)
        lag_task.cancel()
        listed = await client.list(NODES)
        not_ready = sum(
            1
            for n in listed.items
            if not any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (n.get("status") or {}).get("conditions") or ()
            )
        )
        stop.set()
        await asyncio.wait_for(cache_task, 30)
        return {
            "nodes": NODE_COUNT,
            "seconds": round(seconds, 1),
            "leaseRenewalsPerSecond": round(renewals / seconds, 1),
            "maxRenewalGapSeconds": round(max(gaps, default=0.0), 2),
            "p99RenewalGapSeconds": round(sorted(gaps)[int(len(gaps) * 0.99)] if gaps else 0, 2),
            "statusReports": reported,
            "cpuFraction": round(cpu / seconds, 3),
            "lagP99Ms": round(monitor.percentile(0.99) * 1000, 1),
            "notReadyNodes": not_ready,
        }
    finally:
        await client.close()


def cases() -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="karpy-bench-kubelets-") as tmp:
        cp = controlplane.ControlPlane(Path(tmp) / "cp", bin_dir=controlplane.ensure_binaries())
        cp.start()
        try:
            yield {"case": f"heartbeats-{NODE_COUNT}", **uvloop.run(_run(str(cp.kubeconfig)))}
        finally:
            cp.stop()
