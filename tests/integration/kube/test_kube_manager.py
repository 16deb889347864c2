"""The manager in-process on a real apiserver: probes, metrics, leader-only runnables, lease
renewal and probes unaffected by a 5-second CPU-bound function run off the loop, graceful
shutdown that finishes in-flight reconciles and releases the lease, and aggregated events."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import aiohttp

from karpy.kube.client import Client
from karpy.kube.controller import Controller, Result
from karpy.kube.events import NORMAL, WARNING, EventRecorder
from karpy.kube.leaderelection import LeaderElectionConfig
from karpy.kube.manager import Manager, ManagerOptions
from karpy.kube.offload import run_off_loop
from karpy.kube.resources import EVENTS, LEASES, PODS


def burn_cpu(seconds: float) -> int:
    """Pure-Python work that holds the GIL in many short slices."""
    deadline = time.perf_counter() + seconds
    count = 0
    while time.perf_counter() < deadline:
        for i in range(1000):
            count += i * i % 7
    return count


def lease_config(namespace: str) -> LeaderElectionConfig:
    return LeaderElectionConfig(identity=f"test_{uuid.uuid4()}", namespace=namespace)


async def lease_spec(client: Client, namespace: str) -> dict[str, Any]:
    lease = await client.get(LEASES, "karpenter-leader-election", namespace=namespace)
    spec: dict[str, Any] = lease["spec"]
    return spec


async def test_cpu_bound_work_off_loop_does_not_delay_renewal_or_probes(
    client: Client, namespace: str
) -> None:
    manager = Manager(
        client=client,
        options=ManagerOptions(
            bind_address="127.0.0.1",
            metrics_port=0,
            health_probe_port=0,
            leader_election=lease_config(namespace),
            handle_signals=False,
        ),
    )
    manager.cache.informer(PODS, namespace=namespace)
    running = asyncio.create_task(manager.run())
    try:
        await asyncio.wait_for(manager.elected.wait(), 30)
        assert manager.probe_address is not None and manager.metrics_address is not None
        probe = f"http://127.0.0.1:{manager.probe_address[1]}"
        async with aiohttp.ClientSession() as http:
            for _ in range(100):
                async with http.get(f"{probe}/readyz") as resp:
                    if resp.status == 200:
                        break
                await asyncio.sleep(0.1)
            assert resp.status == 200
            renewals: set[str] = set()
            latencies: list[float] = []
            work = asyncio.ensure_future(run_off_loop(burn_cpu, 5.0))
            while not work.done():
                started = time.perf_counter()
                async with http.get(f"{probe}/healthz") as resp:
                    assert resp.status == 200
                latencies.append(time.perf_counter() - started)
                renewals.add((await lease_spec(client, namespace))["renewTime"])
                await asyncio.sleep(0.1)
            assert await work > 0
            metrics_text = await (
                await http.get(f"http://127.0.0.1:{manager.metrics_address[1]}/metrics")
            ).text()
        assert len(renewals) >= 2, "the lease was not renewed while the CPU task ran"
        assert max(latencies) < 1.0, f"a probe took {max(latencies):.2f}s"
        assert manager.is_leader
        assert manager.lag.percentile(1.0) < 1.0
        assert 'leader_election_master_status{name="karpenter-leader-election"} 1.0' in metrics_text
        assert "karpy_event_loop_lag_seconds" in metrics_text
    finally:
        manager.stop()
        await asyncio.wait_for(running, 30)
    assert (await lease_spec(client, namespace)).get("holderIdentity") in (None, "")


async def test_graceful_stop_finishes_in_flight_reconciles_then_releases(
    client: Client, namespace: str
) -> None:
    started = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> Result | None:
        started.set()
        await asyncio.sleep(1.0)  # in flight when the stop arrives
        finished.append(key)
        return None

    manager = Manager(
        client=client,
        options=ManagerOptions(
            bind_address="127.0.0.1",
            metrics_port=None,
            health_probe_port=0,
            leader_election=lease_config(namespace),
            handle_signals=False,
        ),
    )
    controller = Controller[str](name="test-graceful", reconcile=reconcile, initial_keys=["k"])
    manager.add(controller)
    running = asyncio.create_task(manager.run())
    await asyncio.wait_for(started.wait(), 30)
    held = await lease_spec(client, namespace)
    assert held["holderIdentity"].startswith("test_")
    manager.stop()
    await asyncio.wait_for(running, 30)
    assert finished == ["k"]
    released = await lease_spec(client, namespace)
    assert not released.get("holderIdentity")
    assert released["leaseDurationSeconds"] == 1


async def test_standby_runs_caches_but_no_controllers(client: Client, namespace: str) -> None:
    config = lease_config(namespace)
    holder = Manager(
        client=client,
        options=ManagerOptions(
            metrics_port=None, health_probe_port=None, leader_election=config, handle_signals=False
        ),
    )
    holder_task = asyncio.create_task(holder.run())
    await asyncio.wait_for(holder.elected.wait(), 30)
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)

    standby = Manager(
        client=client,
        options=ManagerOptions(
            metrics_port=None,
            health_probe_port=None,
            leader_election=lease_config(namespace),
            handle_signals=False,
        ),
    )
    informer = standby.cache.informer(PODS, namespace=namespace)
    standby.add(Controller[str](name="test-standby", reconcile=reconcile, initial_keys=["x"]))
    standby_task = asyncio.create_task(standby.run())
    await asyncio.wait_for(standby.cache.wait_for_sync(), 30)
    await asyncio.sleep(3)  # beyond one retry period
    assert informer.has_synced() and not standby.is_leader and calls == []
    standby.stop()
    holder.stop()
    await asyncio.wait_for(asyncio.gather(standby_task, holder_task), 30)


async def test_events_are_aggregated(client: Client, namespace: str) -> None:
    pod = await client.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "evented", "namespace": namespace},
            "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "x"}]},
        },
    )
    recorder = EventRecorder(client, instance="test")
    for _ in range(3):
        recorder.publish(
            pod, type=NORMAL, reason="Nominated", message="Pod should schedule on: nodeclaim/x"
        )
    recorder.publish(pod, type=WARNING, reason="FailedScheduling", message="no capacity")
    stop = asyncio.Event()
    task = asyncio.create_task(recorder.start(stop))
    await asyncio.sleep(0.5)
    stop.set()
    await asyncio.wait_for(task, 10)
    events = (await client.list(EVENTS, namespace=namespace)).items
    by_reason = {e["reason"]: e for e in events if e["involvedObject"]["name"] == "evented"}
    assert set(by_reason) == {"Nominated", "FailedScheduling"}
    assert by_reason["Nominated"]["count"] == 3
    assert by_reason["Nominated"]["source"]["component"] == "karpenter"
    assert by_reason["FailedScheduling"]["type"] == WARNING


async def test_event_rate_limit_per_object(client: Client, namespace: str) -> None:
    recorder = EventRecorder(client, burst=3)
    target = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "noisy", "namespace": namespace, "uid": "u1"},
    }
    for i in range(10):
        recorder.publish(target, type=NORMAL, reason="Spam", message=f"m{i}")
    await recorder.flush()
    assert recorder.dropped == 7
    events = (await client.list(EVENTS, namespace=namespace)).items
    assert len([e for e in events if e["reason"] == "Spam"]) == 3
