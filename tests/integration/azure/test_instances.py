"""Azure VM launches against the fake ARM: launch, get, list and delete; adoption after a crash
between the VM's creation and the NodeClaim's status write; capacity errors, counted."""

from __future__ import annotations

import pytest
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient
from azure.mgmt.resourcegraph.aio import ResourceGraphClient

from karpy.apis.azure.v1beta1 import labels
from karpy.cloudprovider.azure.instances import (
    AzureInstances,
    CapacityError,
    LaunchRequest,
    vm_name,
)
from karpy.cloudprovider.types import CreateError, NodeClaimNotFoundError
from tests.integration.azure.cluster import LOCATION, RESOURCE_GROUP, SUBNET, SUBSCRIPTION
from tests.integration.azure.fakearm import FakeArm


@pytest.fixture
def instances(
    compute: ComputeManagementClient, network: NetworkManagementClient, graph: ResourceGraphClient
) -> AzureInstances:
    return AzureInstances(
        compute=compute,
        network=network,
        graph=graph,
        subscription_id=SUBSCRIPTION,
        resource_group=RESOURCE_GROUP,
        location=LOCATION,
        cluster_name="test-cluster",
    )


def _request(nodeclaim: str = "default-abcde", *, spot: bool = True) -> LaunchRequest:
    return LaunchRequest(
        nodeclaim=nodeclaim,
        nodepool="default",
        nodeclass="default",
        sku="Standard_D2s_v3",
        zone="2",
        spot=spot,
        subnet_id=SUBNET,
        image_id="/CommunityGalleries/AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2/images/"
        "2204gen2containerd/versions/202501.01.0",
        os_disk_size_gb=128,
        custom_data="IyEvYmluL2Jhc2gK",
        tags={"team": "platform"},
        identities=(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/kubelet",
        ),
    )


async def test_launch_get_list_delete(arm: FakeArm, instances: AzureInstances) -> None:
    vm = await instances.launch(_request())
    assert vm.name == vm_name("default-abcde") == "aks-default-abcde"
    assert (vm.sku, vm.zone, vm.spot) == ("Standard_D2s_v3", "2", True)
    assert vm.provisioning_state == "Succeeded"
    assert vm.provider_id.startswith("azure:///subscriptions/")
    assert vm.tags[labels.TAG_CLUSTER] == "test-cluster"
    assert vm.tags[labels.TAG_NODEPOOL] == "default"
    assert vm.tags["team"] == "platform"
    (stored,) = arm.state.of_kind("vm")
    assert stored["properties"]["evictionPolicy"] == "Delete"
    assert stored["properties"]["networkProfile"]["networkInterfaces"][0]["id"].endswith(
        "/networkInterfaces/aks-default-abcde"
    )
    assert [*stored["identity"]["userAssignedIdentities"]] == [_request().identities[0]]

    assert (await instances.get("default-abcde")).id == vm.id
    await instances.launch(_request("default-other", spot=False))
    assert sorted(v.name for v in await instances.list()) == [
        "aks-default-abcde",
        "aks-default-other",
    ]

    await instances.delete("default-abcde")
    assert [v.name for v in await instances.list()] == ["aks-default-other"]
    assert len(arm.state.of_kind("nic")) == 1  # the VM's NIC went with it
    with pytest.raises(NodeClaimNotFoundError):
        await instances.get("default-abcde")
    with pytest.raises(NodeClaimNotFoundError):
        await instances.delete("default-abcde")


async def test_a_relaunch_after_a_crash_adopts_the_vm(
    arm: FakeArm, instances: AzureInstances
) -> None:
    first = await instances.launch(_request())
    # The controller crashed before writing the NodeClaim's status; it launches again.
    again = await instances.launch(_request())
    assert again.id == first.id
    assert len(arm.state.of_kind("vm")) == 1
    assert arm.state.calls[("PUT", "vm")] == 1


@pytest.mark.parametrize(
    ("code", "message", "quota"),
    [
        ("SkuNotAvailable", "The requested VM size is not available in zone 2", False),
        ("ZonalAllocationFailed", "Allocation failed in zone 2", False),
        ("AllocationFailed", "Allocation failed", False),
        (
            "OperationNotAllowed",
            "Operation could not be completed as it results in exceeding approved "
            "standardDSv3Family Cores quota",
            True,
        ),
    ],
)
async def test_capacity_errors_name_the_offering_and_are_not_retried(
    arm: FakeArm, instances: AzureInstances, code: str, message: str, quota: bool
) -> None:
    arm.state.fail_vm_create(code, message)
    with pytest.raises(CapacityError) as info:
        await instances.launch(_request())
    err = info.value
    assert (err.code, err.sku, err.zone, err.capacity_type) == (
        code,
        "Standard_D2s_v3",
        "2",
        "spot",
    )
    assert err.quota is quota
    assert arm.state.calls[("PUT", "vm")] == 1
    assert arm.state.resources == {}  # neither a failed VM nor its NIC is left behind


async def test_other_errors_are_create_errors(arm: FakeArm, instances: AzureInstances) -> None:
    arm.state.fail_vm_create("InvalidParameter", "bad image")
    with pytest.raises(CreateError):
        await instances.launch(_request())
