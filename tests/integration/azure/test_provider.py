"""The Azure CloudProvider (`PROVIDER=azure`) against the fake ARM: a NodeClaim launched, read,
listed, found drifted and deleted; a relaunch after a crash adopts the VM; refused launches mark
offerings unavailable so the next launch asks for something else (calls counted)."""

from __future__ import annotations

import pytest
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient
from azure.mgmt.resourcegraph.aio import ResourceGraphClient

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.cloudprovider.azure.plugin import PriceRefresher, build_azure_provider
from karpy.cloudprovider.azure.provider import AzureCloudProvider
from karpy.cloudprovider.registry import ProviderUnavailableError, get_plugin
from karpy.cloudprovider.types import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpy.settings import load_settings
from tests.integration.azure.cluster import (
    CA_BUNDLE,
    LOCATION,
    PRICES,
    RESOURCE_GROUP,
    SETTINGS,
    SUBSCRIPTION,
    NodeClasses,
    claim,
    nodeclass,
)
from tests.integration.azure.fakearm import FakeArm
from tests.integration.azure.nodeboot import read_custom_data


def test_provider_azure_is_registered() -> None:
    plugin = get_plugin("azure")
    assert plugin.name == "azure"
    plugin.check(load_settings(SETTINGS))
    with pytest.raises(ProviderUnavailableError, match="no host name"):
        plugin.check(load_settings({**SETTINGS, "CLUSTER_ENDPOINT": "https://:443"}))


async def test_launch_get_list_drift_delete(
    arm: FakeArm, provider: AzureCloudProvider, classes: NodeClasses
) -> None:
    launched = await provider.create(claim())
    labels = launched.metadata.labels or {}
    assert labels["node.kubernetes.io/instance-type"] == "Standard_D2s_v3"
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    assert labels["topology.kubernetes.io/zone"] in {"westus2-1", "westus2-2", "westus2-3"}
    assert labels[azure.LABEL_SKU_FAMILY] == "D"
    assert labels["karpenter.sh/nodepool"] == "default"
    assert launched.status is not None and launched.status.allocatable is not None
    assert launched.status.allocatable["cpu"] == "1900m"
    provider_id = launched.status.provider_id or ""
    assert provider_id.lower().startswith(
        f"azure:///subscriptions/{SUBSCRIPTION}/resourcegroups/{RESOURCE_GROUP}/".lower()
    )
    (vm,) = arm.state.of_kind("vm")
    assert vm["tags"][azure.TAG_NODECLASS] == "default"
    assert vm["tags"]["team"] == "platform"
    assert vm["properties"]["priority"] == "Regular"
    assert vm["properties"]["storageProfile"]["imageReference"]["id"].endswith(
        "/images/2204gen2containerd/versions/latest"
    )
    boot = read_custom_data(vm["properties"]["osProfile"]["customData"]).variables
    flags = dict(f.split("=", 1) for f in boot["KUBELET_FLAGS"].split(" "))
    assert flags["--register-with-taints"] == (
        "karpenter.sh/unregistered:NoExecute,dedicated=web:NoSchedule"
    )
    labels = dict(p.split("=", 1) for p in boot["KUBELET_NODE_LABELS"].split(","))
    assert labels["karpenter.sh/nodepool"] == "default"
    assert labels["node.kubernetes.io/instance-type"] == "Standard_D2s_v3"
    assert labels["kubernetes.azure.com/cluster"] == RESOURCE_GROUP
    assert flags["--max-pods"] == "250"  # Azure CNI overlay
    assert flags["--kube-reserved"] == "cpu=100m,memory=1843Mi"  # Standard_D2s_v3's
    assert boot["TLS_BOOTSTRAP_TOKEN"] == SETTINGS["KUBELET_BOOTSTRAP_TOKEN"]
    assert boot["API_SERVER_NAME"] == "test-cluster-dns-12345678.hcp.westus2.azmk8s.io"
    assert boot["KUBE_CA_CRT"] == CA_BUNDLE
    assert boot["KUBERNETES_VERSION"] == "1.33.2"  # the apiserver's: the class has none yet
    assert boot["SUBNET"] == "aks-subnet"
    assert boot["USER_ASSIGNED_IDENTITY_ID"] == "kubelet-client-1"
    assert boot["ADMINUSER"] == vm["properties"]["osProfile"]["adminUsername"] == "aksadmin"

    got = await provider.get(provider_id)
    assert got.name == "default-abcde"
    assert (got.metadata.labels or {})["node.kubernetes.io/instance-type"] == "Standard_D2s_v3"
    assert [c.status.provider_id for c in await provider.list() if c.status] == [provider_id]

    assert await provider.is_drifted(launched) is None
    classes.current = nodeclass(osDiskSizeGB=256)
    assert await provider.is_drifted(launched) == "NodeClassDrift"

    await provider.delete(launched)
    assert arm.state.resources == {}  # the VM, and its NIC with it
    with pytest.raises(NodeClaimNotFoundError):
        await provider.delete(launched)
    with pytest.raises(NodeClaimNotFoundError):
        await provider.get(provider_id)


async def test_nodes_get_the_class_s_resolved_kubernetes_version(
    arm: FakeArm, provider: AzureCloudProvider, classes: NodeClasses
) -> None:
    resolved = nodeclass()
    resolved.status = (
        type(resolved)
        .model_validate(
            {"metadata": {"name": "default"}, "status": {"kubernetesVersion": "1.32.7"}}
        )
        .status
    )
    classes.current = resolved
    await provider.create(claim())
    (vm,) = arm.state.of_kind("vm")
    boot = read_custom_data(vm["properties"]["osProfile"]["customData"]).variables
    assert boot["KUBERNETES_VERSION"] == "1.32.7"


async def test_no_kubernetes_version_anywhere_launches_nothing(
    arm: FakeArm, provider: AzureCloudProvider
) -> None:
    provider.cluster_version = None
    with pytest.raises(NodeClassNotReadyError, match="no Kubernetes version"):
        await provider.create(claim())
    assert arm.state.of_kind("vm") == []


async def test_a_relaunch_after_a_crash_adopts_the_vm(
    arm: FakeArm, provider: AzureCloudProvider
) -> None:
    first = await provider.create(claim())
    again = await provider.create(claim())
    assert first.status is not None and again.status is not None
    assert again.status.provider_id == first.status.provider_id
    assert arm.state.calls[("PUT", "vm")] == 1
    assert len(arm.state.of_kind("vm")) == 1


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("SkuNotAvailable", "The requested VM size Standard_D2s_v3 is not available"),
        ("AllocationFailed", "Allocation failed. We do not have sufficient capacity"),
        (
            "OperationNotAllowed",
            "Operation could not be completed as it results in exceeding approved "
            "standardDSv3Family Cores quota. Current Limit: 0",
        ),
    ],
)
async def test_a_refused_offering_is_not_asked_for_again(
    arm: FakeArm, provider: AzureCloudProvider, code: str, message: str
) -> None:
    arm.state.fail_vm_create(code, message)
    with pytest.raises(InsufficientCapacityError):
        await provider.create(claim("default-first"))
    assert arm.state.resources == {}
    # The refusal covers the SKU in every zone for on-demand: the retried NodeClaim gets the
    # next cheapest SKU at once, with one VM PUT, not one per zone.
    retried = await provider.create(claim("default-second"))
    assert (retried.metadata.labels or {})["node.kubernetes.io/instance-type"] == (
        "Standard_D4s_v3"
    )
    assert arm.state.calls[("PUT", "vm")] == 2
    types = await provider.instance_types.for_nodeclass(nodeclass())
    (d2,) = [t for t in types if t.name == "Standard_D2s_v3"]
    assert not any(o.available for o in d2.offerings if o.capacity_type == "on-demand")


async def test_a_claim_limited_to_a_refused_sku_fails_without_calling_arm(
    arm: FakeArm, provider: AzureCloudProvider
) -> None:
    arm.state.fail_vm_create("SkuNotAvailable", "not available")
    only = ("Standard_D2s_v3",)
    with pytest.raises(InsufficientCapacityError):
        await provider.create(claim("default-first", types=only))
    puts = arm.state.calls[("PUT", "vm")]
    for attempt in range(5):
        with pytest.raises(InsufficientCapacityError):
            await provider.create(claim(f"default-retry{attempt}", types=only))
    assert arm.state.calls[("PUT", "vm")] == puts == 1  # no retry storm


async def test_prices_start_from_the_snapshot_and_refresh_from_the_api(
    arm: FakeArm,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
    classes: NodeClasses,
) -> None:
    built = build_azure_provider(
        load_settings(SETTINGS), compute=compute, network=network, graph=graph,
        nodeclass_of=classes,
    )  # fmt: skip
    # westus2 is in the snapshot: its published price until the API answers.
    assert built.instance_types.prices[("Standard_D2s_v3", "on-demand")] == 0.096
    down = PriceRefresher(
        instance_types=built.instance_types, endpoint="https://127.0.0.1:9", ssl=False
    )
    assert not await down.refresh_once()
    assert built.instance_types.prices[("Standard_D2s_v3", "on-demand")] == 0.096

    arm.state.prices = [
        {**item, "armRegionName": LOCATION, "unitOfMeasure": "1 Hour", "type": "Consumption"}
        for item in PRICES
    ]
    up = PriceRefresher(instance_types=built.instance_types, endpoint=arm.url, ssl=False)
    assert await up.refresh_once()
    assert built.instance_types.prices[("Standard_D2s_v3", "on-demand")] == 0.1
    assert built.instance_types.prices[("Standard_D2s_v3", "spot")] == 0.02
    assert arm.state.calls[("GET", "prices")] == 1
