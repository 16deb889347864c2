"""Garbage collection on the local control plane with the fake ARM: a VM no NodeClaim owns is
deleted with its NIC by the core instance collector through the Azure provider's `list`, and a
NIC left by a launch that crashed before its VM is deleted by the NIC collector; what a
NodeClaim still owns stays."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from azure.mgmt.network.aio import NetworkManagementClient

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.descriptors import NODECLAIMS
from karpy.cloudprovider.azure.nicgc import NICGarbageCollection
from karpy.cloudprovider.azure.provider import AzureCloudProvider
from karpy.controllers.garbagecollection import InstanceGarbageCollection
from karpy.kube import NODES, Cache, Client, FakeClock
from tests.integration.azure.cluster import LOCATION, RESOURCE_GROUP, SUBNET, claim
from tests.integration.azure.fakearm import FakeArm
from tests.kit import nodeclaim

pytestmark = pytest.mark.usefixtures("crds", "clean_cluster")


@pytest.fixture
async def kube(kubeconfig: str) -> AsyncIterator[tuple[Client, Cache]]:
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    cache.informer(NODES)
    stop = asyncio.Event()
    task = asyncio.create_task(cache.start(stop))
    await cache.wait_for_sync()
    try:
        yield client, cache
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await client.close()


def _owned(name: str) -> dict[str, object]:
    return nodeclaim(name, pool="default", kind="AKSNodeClass", group="karpenter.azure.com")


async def test_a_leaked_vm_is_collected_with_its_nic(
    arm: FakeArm,
    kube: tuple[Client, Cache],
    provider: AzureCloudProvider,
) -> None:
    client, cache = kube
    await provider.create(claim("default-leaked"))  # its NodeClaim never made it
    await provider.create(claim("default-owned"))
    await client.create(NODECLAIMS, _owned("default-owned"))
    gc = InstanceGarbageCollection(
        client=client,
        nodes=cache.informer(NODES),
        cloud_provider=provider,
        clock=FakeClock(),
        min_age=timedelta(0),
    )
    await gc.reconcile(gc.name)
    assert sorted(r["name"] for r in arm.state.of_kind("vm")) == ["aks-default-owned"]
    assert sorted(r["name"] for r in arm.state.of_kind("nic")) == ["aks-default-owned"]


async def test_a_nic_without_vm_or_nodeclaim_is_collected(
    arm: FakeArm,
    kube: tuple[Client, Cache],
    network: NetworkManagementClient,
    provider: AzureCloudProvider,
) -> None:
    client, _ = kube
    for name in ("default-crashed", "default-launching"):
        poller = await network.network_interfaces.begin_create_or_update(
            RESOURCE_GROUP,
            f"aks-{name}",
            {
                "location": LOCATION,
                "tags": {azure.TAG_CLUSTER: "test-cluster", azure.TAG_NODECLAIM: name},
                "properties": {
                    "ipConfigurations": [
                        {"name": "ipconfig1", "properties": {"subnet": {"id": SUBNET}}}
                    ]
                },
            },
        )
        await poller.result()
    await client.create(NODECLAIMS, _owned("default-launching"))
    await provider.create(claim("default-running"))  # a VM's NIC, NodeClaim gone or not
    gc = NICGarbageCollection(
        client=client,
        network=provider.instances.network,
        compute=provider.instances.compute,
        resource_group=RESOURCE_GROUP,
        cluster_name="test-cluster",
        clock=FakeClock(),
        min_age=0.0,
    )
    await gc.reconcile(gc.name)
    assert sorted(r["name"] for r in arm.state.of_kind("nic")) == [
        "aks-default-launching",
        "aks-default-running",
    ]
    assert arm.state.calls[("DELETE", "nic")] == 1
