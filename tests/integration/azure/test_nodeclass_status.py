"""AKSNodeClass status against the fake ARM: node images resolved to their newest version per
architecture, the Kubernetes version, the subnet checked; Ready over them; a launch then uses
the resolved image."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.objects import get_condition
from karpy.cloudprovider.azure.nodeclassstatus import AKSNodeClassResolver
from karpy.cloudprovider.azure.provider import AzureCloudProvider
from karpy.cloudprovider.types import NodeClassNotReadyError
from tests.integration.azure.conftest import LOCATION, RESOURCE_GROUP, SUBSCRIPTION
from tests.integration.azure.fakearm import FakeArm
from tests.integration.azure.test_provider import (  # noqa: F401 (fixtures)
    Classes,
    _claim,
    classes,
    provider,
)

UBUNTU = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
SUBNET = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
    "Microsoft.Network/virtualNetworks/aks-vnet-12345678/subnets/aks-subnet"
)
OTHER_SUBNET = SUBNET.replace("aks-subnet", "other-subnet")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _seed(arm: FakeArm) -> None:
    arm.state.subnets.add(SUBNET.lower())
    arm.state.images[(UBUNTU, "2204gen2containerd")] = ["202412.01.0", "202501.12.0", "202501.5.0"]
    arm.state.images[(UBUNTU, "2204gen2arm64containerd")] = ["202501.12.0"]


def _obj(generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "default", "generation": generation},
        "spec": {"imageFamily": "Ubuntu2204", **spec},
    }


@pytest.fixture
def resolver(
    arm: FakeArm, compute: ComputeManagementClient, network: NetworkManagementClient
) -> AKSNodeClassResolver:
    _seed(arm)

    async def version() -> str:
        return "v1.33.1"

    return AKSNodeClassResolver(
        compute=compute,
        network=network,
        location=LOCATION,
        default_subnet_id=SUBNET,
        kubernetes_version=version,
    )


def _status(conditions: list[dict[str, Any]], type_: str) -> tuple[str, str]:
    found = get_condition(conditions, type_)
    assert found is not None, type_
    return str(found["status"]), str(found["reason"])


async def test_a_good_class_is_ready_with_the_newest_images(
    resolver: AKSNodeClassResolver,
) -> None:
    status = await resolver.resolve(_obj(), now=T0)
    assert status["kubernetesVersion"] == "1.33.1"
    assert status["images"] == [
        {
            "id": f"/CommunityGalleries/{UBUNTU}/images/2204gen2containerd/versions/202501.12.0",
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
        },
        {
            "id": f"/CommunityGalleries/{UBUNTU}/images/2204gen2arm64containerd/versions/"
            "202501.12.0",
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
        },
    ]
    conditions = status["conditions"]
    for type_ in ("ImagesReady", "KubernetesVersionReady", "SubnetsReady", "Ready"):
        assert _status(conditions, type_) == ("True", type_)
    assert {c["observedGeneration"] for c in conditions} == {1}
    # The status the apiserver would admit.
    AKSNodeClass.model_validate({**_obj(), "status": status})


async def test_a_missing_subnet_makes_the_class_not_ready_until_it_exists(
    arm: FakeArm, resolver: AKSNodeClassResolver
) -> None:
    obj = _obj(vnetSubnetID=OTHER_SUBNET)
    status = await resolver.resolve(obj, now=T0)
    conditions = status["conditions"]
    assert _status(conditions, "SubnetsReady") == ("False", "SubnetNotFound")
    ready = get_condition(conditions, "Ready")
    assert ready is not None and ready["status"] == "False"
    assert ready["reason"] == "UnhealthyDependents" and ready["message"] == "SubnetsReady=False"
    # Unchanged an hour later: the transition time holds.
    obj["status"] = status
    again = await resolver.resolve(obj, now=T0 + timedelta(hours=1))
    assert get_condition(again["conditions"], "Ready") == ready
    arm.state.subnets.add(OTHER_SUBNET.lower())
    obj["status"] = again
    fixed = await resolver.resolve(obj, now=T0 + timedelta(hours=2))
    ready = get_condition(fixed["conditions"], "Ready")
    assert ready is not None and ready["status"] == "True"
    assert ready["lastTransitionTime"] == "2026-01-01T02:00:00Z"


@pytest.mark.parametrize(
    ("family", "reason"),
    [("Windows2022", "ImageFamilyNotSupported"), ("AzureLinux", "ImagesNotFound")],
)
async def test_image_families_without_images_are_not_ready(
    resolver: AKSNodeClassResolver, family: str, reason: str
) -> None:
    status = await resolver.resolve(_obj(imageFamily=family), now=T0)
    assert "images" not in status
    assert _status(status["conditions"], "ImagesReady") == ("False", reason)
    assert _status(status["conditions"], "Ready")[0] == "False"


async def test_a_launch_uses_the_resolved_image_and_a_not_ready_class_none(
    arm: FakeArm,
    resolver: AKSNodeClassResolver,
    provider: AzureCloudProvider,  # noqa: F811
    classes: Classes,  # noqa: F811
) -> None:
    status = await resolver.resolve(_obj(), now=T0)
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": status})
    await provider.create(_claim())
    (vm,) = arm.state.of_kind("vm")
    assert vm["properties"]["storageProfile"]["imageReference"]["id"] == status["images"][0]["id"]

    bad = await resolver.resolve(_obj(vnetSubnetID=OTHER_SUBNET), now=T0)
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": bad})
    with pytest.raises(NodeClassNotReadyError, match="SubnetsReady=False"):
        await provider.create(_claim("default-other"))
    assert arm.state.calls[("PUT", "vm")] == 1


async def test_an_old_kubelet_a_newer_image_or_another_subnet_drifts_the_vm(
    arm: FakeArm,
    resolver: AKSNodeClassResolver,
    provider: AzureCloudProvider,  # noqa: F811
    classes: Classes,  # noqa: F811
) -> None:
    status = await resolver.resolve(_obj(), now=T0)
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": status})
    launched = await provider.create(_claim())
    assert await provider.is_drifted(launched) is None
    # Its Node registered with a kubelet older than the control plane's 1.33.1.
    assert launched.status is not None
    launched.status.node_name = "aks-default-abcde"
    kubelet = {"version": "v1.32.5"}

    def node_of(name: str) -> dict[str, Any] | None:
        if name != "aks-default-abcde":
            return None
        return {"status": {"nodeInfo": {"kubeletVersion": kubelet["version"]}}}

    provider.node_of = node_of
    assert await provider.is_drifted(launched) == "K8sVersionDrift"
    kubelet["version"] = "v1.32.5-kwok"  # a simulated kubelet is not compared
    assert await provider.is_drifted(launched) is None
    kubelet["version"] = "v1.33.1"
    assert await provider.is_drifted(launched) is None
    # A new node image version is published: the class resolves it, the VM is behind.
    arm.state.images[(UBUNTU, "2204gen2containerd")].append("202502.01.0")
    newer = await resolver.resolve({**_obj(), "status": status}, now=T0)
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": newer})
    assert await provider.is_drifted(launched) == "ImageVersionDrift"
    # Back on the VM's image, but VNET_SUBNET_ID now names another subnet.
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": status})
    provider.launch = replace(provider.launch, vnet_subnet_id=OTHER_SUBNET)
    assert await provider.is_drifted(launched) == "SubnetDrift"
