"""Fixtures for the provisioning, lifecycle, cluster-state and kwok tests: CRDs, a clean
cluster, and a started informer cache with karpy's cluster state over it (in-process, against
the session's real control plane)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubetest import Kubectl, delete_cluster_objects

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.provider import KWOKNODECLASSES, KwokCloudProvider
from karpy.kube import Cache, Client, EventRecorder
from karpy.state import Cluster

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


@pytest.fixture(scope="session")
def provisioning_crds(kubectl: Kubectl) -> None:
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(CRDS))


@pytest.fixture
def clean(provisioning_crds: None, kubectl: Kubectl) -> Iterator[None]:
    delete_cluster_objects(kubectl)
    yield
    delete_cluster_objects(kubectl)


@dataclass
class Env:
    client: Client
    cache: Cache
    cluster: Cluster
    kwok: KwokCloudProvider
    events: EventRecorder
    kubectl: Kubectl
    namespace: str


@pytest.fixture
async def env(kubeconfig: str, kubectl: Kubectl, namespace: str, clean: None) -> AsyncIterator[Env]:
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    cluster = Cluster(cache, nomination_window=20.0)
    kwok = KwokCloudProvider(client=client, cache=cache, instance_types=kwok_instance_types())
    cache.informer(KWOKNODECLASSES)
    events = EventRecorder(client)
    stop = asyncio.Event()
    task = asyncio.create_task(cache.start(stop))
    await cache.wait_for_sync()
    try:
        yield Env(
            client=client,
            cache=cache,
            cluster=cluster,
            kwok=kwok,
            events=events,
            kubectl=kubectl,
            namespace=namespace,
        )
    finally:
        await events.flush()
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()
