"""Informers against a real apiserver: a genuinely expired watch (410) relists, an apiserver
killed mid-watch loses and duplicates nothing, and 5,000 objects churned concurrently end with
the cache equal to a fresh list."""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from typing import Any

import pytest
from controlplane import ControlPlane

from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.config import load_config
from karpy.kube.errors import KubeError, NotFoundError
from karpy.kube.faults import FaultInjectingTransport
from karpy.kube.informer import Informer
from karpy.kube.resources import NAMESPACES, Resource, object_key
from karpy.kube.store import field_indexer

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", namespaced=True)


class Ledger:
    """An event handler that checks the add/update/delete stream is self-consistent."""

    def __init__(self) -> None:
        self.present: set[str] = set()
        self.problems: list[str] = []
        self.deletes = 0

    def on_add(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        if key in self.present:
            self.problems.append(f"duplicate add {key}")
        self.present.add(key)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if object_key(new) not in self.present:
            self.problems.append(f"update of unknown {object_key(new)}")

    def on_delete(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        if key not in self.present:
            self.problems.append(f"delete of unknown {key}")
        self.present.discard(key)
        self.deletes += 1


def configmap(name: str, namespace: str, value: str = "0") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"value": value},
    }


async def fresh(client: Client, namespace: str) -> dict[str, str]:
    listed = await client.list(CONFIGMAPS, namespace=namespace)
    return {object_key(o): o["metadata"]["resourceVersion"] for o in listed.items}


def cached(informer: Informer) -> dict[str, str]:
    return {object_key(o): o["metadata"]["resourceVersion"] for o in informer.list()}


async def converge(client: Client, informer: Informer, namespace: str, *, seconds: float) -> None:
    """Wait until the cache equals a fresh list (keys and resourceVersions)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        expected = await fresh(client, namespace)
        if cached(informer) == expected:
            return
        if asyncio.get_running_loop().time() > deadline:
            missing = expected.keys() - cached(informer).keys()
            extra = cached(informer).keys() - expected.keys()
            raise AssertionError(f"cache never matched: {len(missing)} missing, {len(extra)} extra")
        await asyncio.sleep(0.5)


async def test_expired_watch_relists_with_synthetic_deletes(
    control_plane_no_watch_cache: ControlPlane,
) -> None:
    plane = control_plane_no_watch_cache
    config = await load_config(kubeconfig=str(plane.kubeconfig))
    faulty = FaultInjectingTransport(config.transport())
    namespace = f"gone-{uuid.uuid4().hex[:6]}"
    async with Client(faulty, qps=0) as client, Client(config.transport(), qps=0) as direct:
        await direct.create(NAMESPACES, {"metadata": {"name": namespace}})
        for i in range(20):
            await direct.create(CONFIGMAPS, configmap(f"cm-{i}", namespace))
        cache = Cache(client)
        informer = cache.informer(CONFIGMAPS, namespace=namespace)
        ledger = Ledger()
        informer.add_handler(ledger)
        stop = asyncio.Event()
        runner = asyncio.create_task(cache.start(stop))
        await asyncio.wait_for(cache.wait_for_sync(), 30)
        assert informer.reflector.lists == 1

        faulty.partition()  # the watch breaks; changes happen while the informer is away
        for i in range(5):
            await direct.delete(CONFIGMAPS, f"cm-{i}", namespace=namespace)
            await direct.patch(
                CONFIGMAPS, f"cm-{i + 5}", {"data": {"value": "1"}}, namespace=namespace
            )
            await direct.create(CONFIGMAPS, configmap(f"new-{i}", namespace))
        await asyncio.to_thread(plane.compact_etcd)  # the informer's resourceVersion expires
        faulty.heal()

        await converge(direct, informer, namespace, seconds=60)
        assert informer.reflector.expired >= 1, "the watch never saw 410 Gone"
        assert informer.reflector.lists >= 2, "no relist after 410"
        assert ledger.deletes == 5  # synthetic deletes for objects gone while away
        assert not ledger.problems, ledger.problems[:5]
        assert ledger.present == set(cached(informer))
        stop.set()
        await runner
        await direct.delete(NAMESPACES, namespace)


async def test_apiserver_killed_and_restarted_mid_watch(
    control_plane_no_watch_cache: ControlPlane,
) -> None:
    plane = control_plane_no_watch_cache
    config = await load_config(kubeconfig=str(plane.kubeconfig))
    namespace = f"restart-{uuid.uuid4().hex[:6]}"
    async with (
        Client(config.transport(), qps=0) as client,
        Client(config.transport(), qps=0) as writer,
    ):
        await writer.create(NAMESPACES, {"metadata": {"name": namespace}})
        for i in range(30):
            await writer.create(CONFIGMAPS, configmap(f"cm-{i}", namespace))
        cache = Cache(client)
        informer = cache.informer(CONFIGMAPS, namespace=namespace)
        ledger = Ledger()
        informer.add_handler(ledger)
        stop = asyncio.Event()
        runner = asyncio.create_task(cache.start(stop))
        await asyncio.wait_for(cache.wait_for_sync(), 30)

        async def churn(prefix: str) -> None:
            for i in range(10):
                await writer.create(CONFIGMAPS, configmap(f"{prefix}-{i}", namespace))
                await writer.patch(
                    CONFIGMAPS, f"cm-{i}", {"data": {"value": prefix}}, namespace=namespace
                )
            for i in range(10, 15):
                with contextlib.suppress(NotFoundError):
                    await writer.delete(CONFIGMAPS, f"cm-{i}", namespace=namespace)

        await churn("before")
        await asyncio.to_thread(plane.stop_apiserver, kill=True)
        await asyncio.sleep(1.0)
        await asyncio.to_thread(plane.start_apiserver)
        for _ in range(60):  # the writer's first calls may still hit a starting apiserver
            try:
                await churn("after")
                break
            except KubeError:
                await asyncio.sleep(0.5)
        await converge(writer, informer, namespace, seconds=90)
        assert not ledger.problems, ledger.problems[:5]
        assert ledger.present == set(cached(informer))
        assert any(o["data"]["value"] == "after" for o in informer.list())
        stop.set()
        await runner
        await writer.delete(NAMESPACES, namespace)


@pytest.mark.slow
async def test_five_thousand_objects_churned_concurrently(client: Client, namespace: str) -> None:
    cache = Cache(client)
    cache.add_indexer(CONFIGMAPS, "value", field_indexer("data", "value"))
    informer = cache.informer(CONFIGMAPS, namespace=namespace)
    ledger = Ledger()
    informer.add_handler(ledger)
    stop = asyncio.Event()
    runner = asyncio.create_task(cache.start(stop))
    await asyncio.wait_for(cache.wait_for_sync(), 30)
    rng = random.Random(7)
    limit = asyncio.Semaphore(64)

    async with Client(client.transport, qps=0) as writer:

        async def lifecycle(i: int) -> None:
            name = f"cm-{i:05d}"
            async with limit:
                await writer.create(CONFIGMAPS, configmap(name, namespace))
            for round_ in range(rng.randint(0, 2)):
                async with limit:
                    await writer.patch(
                        CONFIGMAPS, name, {"data": {"value": str(round_ + 1)}}, namespace=namespace
                    )
            if rng.random() < 0.3:
                async with limit:
                    await writer.delete(CONFIGMAPS, name, namespace=namespace)

        await asyncio.gather(*(lifecycle(i) for i in range(5000)))
        await converge(writer, informer, namespace, seconds=120)
    assert not ledger.problems, ledger.problems[:5]
    counts = {v: len(informer.by_index("value", v)) for v in ("0", "1", "2")}
    assert sum(counts.values()) == len(informer.list()) > 3000
    stop.set()
    await runner
