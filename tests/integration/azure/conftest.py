"""The fake ARM server (`fakearm.FakeArm`) per test, the real async Azure SDK clients pointed
at it through `base_url`, with a static bearer token (the fake checks none), and the test
cluster's AKSNodeClass (`classes`) and Azure provider (`provider`) on them (`cluster.py`)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient
from azure.mgmt.resourcegraph.aio import ResourceGraphClient

from karpy.cloudprovider.azure.provider import AzureCloudProvider
from tests.integration.azure.cluster import (
    SUBSCRIPTION,
    NodeClasses,
    build_provider,
    nodeclass,
    seed_skus,
)
from tests.integration.azure.fakearm import FakeArm


class StaticToken:
    """An `AsyncTokenCredential` with a fixed token: the seam where a real credential
    (`azure.identity.aio.DefaultAzureCredential`) plugs in."""

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("fake-token", int(time.time()) + 3600)

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> StaticToken:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


# Short retry backoff so injected 429s cost little; Retry-After from the fake still rules.
CLIENT_OPTIONS: dict[str, Any] = {
    "connection_verify": False,
    "polling_interval": 0,
    "retry_backoff_factor": 0.1,
    "retry_total": 3,
}


@pytest.fixture
async def arm() -> AsyncIterator[FakeArm]:
    async with FakeArm() as server:
        yield server


@pytest.fixture
async def compute(arm: FakeArm) -> AsyncIterator[ComputeManagementClient]:
    async with ComputeManagementClient(
        StaticToken(), SUBSCRIPTION, base_url=arm.url, **CLIENT_OPTIONS
    ) as client:
        yield client


@pytest.fixture
async def network(arm: FakeArm) -> AsyncIterator[NetworkManagementClient]:
    async with NetworkManagementClient(
        StaticToken(), SUBSCRIPTION, base_url=arm.url, **CLIENT_OPTIONS
    ) as client:
        yield client


@pytest.fixture
async def graph(arm: FakeArm) -> AsyncIterator[ResourceGraphClient]:
    async with ResourceGraphClient(StaticToken(), base_url=arm.url, **CLIENT_OPTIONS) as client:
        yield client


@pytest.fixture
def classes() -> NodeClasses:
    return NodeClasses(nodeclass())


@pytest.fixture
def provider(
    arm: FakeArm,
    classes: NodeClasses,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
) -> AzureCloudProvider:
    """The provider on the test SKU records, as westus2's, at the test prices."""
    seed_skus(arm)
    return build_provider(compute=compute, network=network, graph=graph, classes=classes)
