"""Fixtures for the termination tests: CRDs installed, a clean cluster, and an `Env` whose
informer cache runs for the test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubetest import Kubectl, delete_cluster_objects

from karpy.kube import Cache, Client
from tests.integration.termination.support import Env

ROOT = Path(__file__).resolve().parents[3]
CRDS = ROOT / "manifests" / "crds"
CRD_NAMES = (
    "nodepools.karpenter.sh",
    "nodeclaims.karpenter.sh",
    "ec2nodeclasses.karpenter.k8s.aws",
    "kwoknodeclasses.karpenter.kwok.sh",
)


@pytest.fixture(scope="session")
def termination_crds(kubectl: Kubectl) -> None:
    """Install the generated CRDs (idempotent; other suites need them too)."""
    kubectl("apply", "-f", str(CRDS))
    kubectl(
        "wait",
        "--for=condition=Established",
        *(f"crd/{name}" for name in CRD_NAMES),
        "--timeout=60s",
        timeout=90,
    )


@pytest.fixture
def clean(termination_crds: None, kubectl: Kubectl) -> Iterator[None]:
    delete_cluster_objects(kubectl)
    yield
    delete_cluster_objects(kubectl)


@pytest.fixture
async def env(kubeconfig: str, kubectl: Kubectl, namespace: str, clean: None) -> AsyncIterator[Env]:
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    environment = Env(client=client, cache=cache, kubectl=kubectl, namespace=namespace)
    stop = asyncio.Event()
    cache_task = asyncio.create_task(cache.start(stop))
    try:
        yield environment
    finally:
        await environment.close()
        stop.set()
        await asyncio.wait_for(cache_task, 10)
        await client.close()
