"""The fake ARM server answers the real async Azure SDK clients: SKUs, NIC and VM long-running
operations, Resource Graph, retail prices, and the injected throttling and capacity errors."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient
from azure.mgmt.resourcegraph.aio import ResourceGraphClient
from azure.mgmt.resourcegraph.models import QueryRequest

from karpy.apis.azure.v1beta1 import labels
from karpy.cloudprovider.azure.skus import parse_sku
from tests.integration.azure.cluster import LOCATION, RESOURCE_GROUP, SUBSCRIPTION
from tests.integration.azure.fakearm import FakeArm

SKUS = (
    Path(__file__).parents[2]
    / "unit"
    / "cloudprovider"
    / "azure"
    / "data"
    / "westcentralus-skus.json"
)
SUBNET = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
    "Microsoft.Network/virtualNetworks/aks-vnet-12345678/subnets/aks-subnet"
)
TAGS = {labels.TAG_CLUSTER: "test-cluster", labels.TAG_NODEPOOL: "default"}


async def _nic(network: NetworkManagementClient, name: str) -> str:
    poller = await network.network_interfaces.begin_create_or_update(
        RESOURCE_GROUP,
        name,
        {
            "location": LOCATION,
            "tags": TAGS,
            "properties": {
                "ipConfigurations": [
                    {"name": "ipconfig1", "properties": {"subnet": {"id": SUBNET}, "primary": True}}
                ]
            },
        },
    )
    nic = await poller.result()
    assert nic.provisioning_state == "Succeeded"
    assert nic.ip_configurations is not None
    assert nic.ip_configurations[0].private_ip_address is not None
    assert nic.id is not None
    return nic.id


def _vm(nic_id: str, *, size: str = "Standard_D2s_v3", zone: str | None = "1") -> dict[str, object]:
    """ARM's JSON of a VM (a plain dict is sent as it is, so in the wire form)."""
    body: dict[str, object] = {
        "location": LOCATION,
        "tags": TAGS,
        "properties": {
            "hardwareProfile": {"vmSize": size},
            "networkProfile": {
                "networkInterfaces": [{"id": nic_id, "properties": {"primary": True}}]
            },
            "priority": "Spot",
            "evictionPolicy": "Delete",
        },
    }
    if zone:
        body["zones"] = [zone]
    return body


async def test_skus_are_listed_by_location(arm: FakeArm, compute: ComputeManagementClient) -> None:
    arm.state.skus[LOCATION] = json.loads(SKUS.read_text())["value"]
    arm.state.skus["eastus"] = arm.state.skus[LOCATION][:1]
    records = [
        sku.as_dict()
        async for sku in compute.resource_skus.list(filter=f"location eq '{LOCATION}'")
    ]
    assert len(records) == 10
    parsed = [parse_sku(r, location=LOCATION) for r in records]
    assert {p.name for p in parsed if p} >= {"Standard_D2s_v3", "Standard_F16s_v2"}
    d2 = next(p for p in parsed if p and p.name == "Standard_D2s_v3")
    assert (d2.vcpus, d2.memory_gib) == (2, 8.0)


async def test_nic_then_vm_through_long_running_operations(
    arm: FakeArm, compute: ComputeManagementClient, network: NetworkManagementClient
) -> None:
    arm.state.lro_polls = 2
    nic_id = await _nic(network, "aks-default-abcde")
    poller = await compute.virtual_machines.begin_create_or_update(
        RESOURCE_GROUP, "aks-default-abcde", _vm(nic_id)
    )
    vm = await poller.result()
    assert vm.provisioning_state == "Succeeded"
    assert vm.zones == ["1"]
    assert vm.tags == TAGS
    assert arm.state.calls[("GET", "operation")] == 2 * 3  # two InProgress and the end, twice
    got = await compute.virtual_machines.get(RESOURCE_GROUP, "aks-default-abcde")
    assert got.hardware_profile is not None
    assert got.hardware_profile.vm_size == "Standard_D2s_v3"

    await (
        await compute.virtual_machines.begin_delete(RESOURCE_GROUP, "aks-default-abcde")
    ).result()
    await (
        await network.network_interfaces.begin_delete(RESOURCE_GROUP, "aks-default-abcde")
    ).result()
    with pytest.raises(ResourceNotFoundError):
        await compute.virtual_machines.get(RESOURCE_GROUP, "aks-default-abcde")
    assert arm.state.resources == {}


async def test_a_second_put_of_the_same_name_adopts_the_vm(
    arm: FakeArm, compute: ComputeManagementClient, network: NetworkManagementClient
) -> None:
    nic_id = await _nic(network, "aks-default-xyz")
    for _ in range(2):
        poller = await compute.virtual_machines.begin_create_or_update(
            RESOURCE_GROUP, "aks-default-xyz", _vm(nic_id)
        )
        await poller.result()
    assert len(arm.state.of_kind("vm")) == 1


async def test_resource_graph_lists_by_cluster_tag(
    arm: FakeArm,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
) -> None:
    nic_id = await _nic(network, "aks-default-one")
    await (
        await compute.virtual_machines.begin_create_or_update(
            RESOURCE_GROUP, "aks-default-one", _vm(nic_id)
        )
    ).result()
    arm.state.resources["/other"] = {
        "id": "/other",
        "name": "other",
        "type": "Microsoft.Compute/virtualMachines",
        "tags": {labels.TAG_CLUSTER: "another-cluster"},
        "properties": {},
    }
    query = (
        "Resources | where type =~ 'Microsoft.Compute/virtualMachines' "
        f"| where tags['{labels.TAG_CLUSTER}'] == 'test-cluster'"
    )
    result = await graph.resources(QueryRequest(subscriptions=[SUBSCRIPTION], query=query))
    assert result.total_records == 1
    assert [row["name"] for row in result.data] == ["aks-default-one"]


async def test_throttling_is_retried_after_retry_after(
    arm: FakeArm, compute: ComputeManagementClient
) -> None:
    arm.state.skus[LOCATION] = json.loads(SKUS.read_text())["value"]
    arm.state.throttle(2)
    records = [s async for s in compute.resource_skus.list(filter=f"location eq '{LOCATION}'")]
    assert len(records) == 10
    assert arm.state.calls[("GET", "throttled")] == 2
    assert arm.state.calls[("GET", "skus")] == 1


@pytest.mark.parametrize(
    ("code", "at_put"),
    [
        ("SkuNotAvailable", True),
        ("OperationNotAllowed", True),  # ARM's quota error
        ("AllocationFailed", False),
        ("ZonalAllocationFailed", False),
    ],
)
async def test_capacity_and_quota_errors(
    arm: FakeArm,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    code: str,
    at_put: bool,
) -> None:
    nic_id = await _nic(network, "aks-default-ice")
    arm.state.fail_vm_create(code)
    with pytest.raises(HttpResponseError) as info:
        poller = await compute.virtual_machines.begin_create_or_update(
            RESOURCE_GROUP, "aks-default-ice", _vm(nic_id)
        )
        await poller.result()
    assert info.value.error is not None
    assert info.value.error.code == code
    assert arm.state.calls[("PUT", "vm")] == 1  # an ARM error is not retried by the SDK
    assert bool(arm.state.of_kind("vm")) is not at_put


async def test_retail_prices_by_region(arm: FakeArm) -> None:
    arm.state.prices = [
        {
            "armRegionName": LOCATION,
            "armSkuName": "Standard_D2s_v3",
            "retailPrice": 1.0,
            "skuName": "D2s v3",
        },
        {
            "armRegionName": "eastus",
            "armSkuName": "Standard_D2s_v3",
            "retailPrice": 2.0,
            "skuName": "D2s v3",
        },
    ]
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{arm.url}/api/retail/prices",
            params={
                "$filter": f"armRegionName eq '{LOCATION}' and serviceName eq 'Virtual Machines'"
            },
            ssl=False,
        ) as response,
    ):
        page = await response.json()
    assert [i["retailPrice"] for i in page["Items"]] == [1.0]
    assert page["NextPageLink"] is None
