"""AKSNodeClass status against the fake ARM: node images chosen for the cluster's Kubernetes
version and resolved to their newest version per architecture and Hyper-V generation, the
Kubernetes version, the subnet checked, the class validated; Ready over them; a launch then uses
the resolved image."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.objects import get_condition
from karpy.apis.v1 import NodePool
from karpy.cloudprovider.azure.nodeclassstatus import AKSNodeClassResolver
from karpy.cloudprovider.azure.pricing import parse_prices
from karpy.cloudprovider.azure.provider import AzureCloudProvider
from karpy.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from tests import kit
from tests.integration.azure.cluster import (
    LOCATION,
    OTHER_SUBNET,
    SUBNET,
    UBUNTU_2204,
    UBUNTU_2404,
    NodeClasses,
    claim,
)
from tests.integration.azure.fakearm import FakeArm

UBUNTU = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"
AZURE_LINUX_2 = ["V2gen2", "V2", "V2gen2arm64"]
AZURE_LINUX_3 = ["V3gen2", "V3"]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _seed(arm: FakeArm) -> None:
    arm.state.subnets.add(SUBNET.lower())
    arm.state.images[(UBUNTU, "2204gen2containerd")] = ["202412.01.0", "202501.12.0", "202501.5.0"]
    arm.state.images[(UBUNTU, "2204containerd")] = ["202501.12.0"]
    arm.state.images[(UBUNTU, "2204gen2arm64containerd")] = ["202501.12.0"]


def _seed_every_family(arm: FakeArm) -> None:
    """Every definition a family can mean, as the real galleries publish them (Azure Linux 3 has
    no arm64 definition in the community gallery)."""
    arm.state.publish_node_images("202502.03.0")


@dataclass
class ClusterVersion:
    """The apiserver's version as the resolver asks for it; tests move it."""

    value: str = "v1.33.1"

    async def __call__(self) -> str:
        return self.value


def _obj(generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "default", "generation": generation},
        "spec": {"imageFamily": "Ubuntu2204", **spec},
    }


@pytest.fixture
def cluster() -> ClusterVersion:
    return ClusterVersion()


@pytest.fixture
def resolver(
    arm: FakeArm,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    cluster: ClusterVersion,
) -> AKSNodeClassResolver:
    _seed(arm)
    return AKSNodeClassResolver(
        compute=compute,
        network=network,
        location=LOCATION,
        default_subnet_id=SUBNET,
        kubernetes_version=cluster,
    )


def _requirements(arch: str, generation: str) -> list[dict[str, Any]]:
    """A `status.images` entry's requirements: the architecture and Hyper-V generation."""
    return [
        {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]},
        {
            "key": "karpenter.azure.com/sku-hyperv-generation",
            "operator": "In",
            "values": [generation],
        },
    ]


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
            "requirements": _requirements("amd64", "2"),
        },
        {
            "id": f"/CommunityGalleries/{UBUNTU}/images/2204containerd/versions/202501.12.0",
            "requirements": _requirements("amd64", "1"),
        },
        {
            "id": f"/CommunityGalleries/{UBUNTU}/images/2204gen2arm64containerd/versions/"
            "202501.12.0",
            "requirements": _requirements("arm64", "2"),
        },
    ]
    conditions = status["conditions"]
    for type_ in (
        "ImagesReady",
        "KubernetesVersionReady",
        "SubnetsReady",
        "ValidationSucceeded",
        "Ready",
    ):
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


def _definitions(status: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(image definition, requirements) of each resolved image, in order."""
    return [(image["id"].split("/")[4], image["requirements"]) for image in status["images"]]


def _archs(definitions: list[str]) -> list[tuple[str, list[dict[str, Any]]]]:
    """What `_definitions` reads for these definitions: the architecture and Hyper-V generation
    their names say."""
    return [
        (d, _requirements("arm64" if "arm64" in d else "amd64", "2" if "gen2" in d else "1"))
        for d in definitions
    ]


@pytest.mark.parametrize(
    ("family", "below", "at", "before", "after"),
    [
        # The default family: Ubuntu 22.04 until Kubernetes 1.34, then 24.04.
        (None, "v1.33.9", "v1.34.0", UBUNTU_2204, UBUNTU_2404),
        ("Ubuntu", "v1.33.9", "v1.34.0", UBUNTU_2204, UBUNTU_2404),
        # A pre-release of the boundary is below it.
        ("Ubuntu", "v1.34.0-rc.1", "v1.34.1", UBUNTU_2204, UBUNTU_2404),
        # Azure Linux 2 until 1.32, then 3 (amd64 only in the community gallery).
        ("AzureLinux", "v1.31.12", "v1.32.0", AZURE_LINUX_2, AZURE_LINUX_3),
        ("AzureLinux", "v1.32.0-alpha.1", "v1.37.2", AZURE_LINUX_2, AZURE_LINUX_3),
        # A pinned release ignores the boundary.
        ("Ubuntu2204", "v1.33.9", "v1.34.0", UBUNTU_2204, UBUNTU_2204),
        ("Ubuntu2404", "v1.33.9", "v1.34.0", UBUNTU_2404, UBUNTU_2404),
    ],
)
async def test_the_images_follow_the_cluster_version_across_the_family_s_boundary(
    arm: FakeArm,
    resolver: AKSNodeClassResolver,
    cluster: ClusterVersion,
    family: str | None,
    below: str,
    at: str,
    before: list[str],
    after: list[str],
) -> None:
    _seed_every_family(arm)
    obj = _obj(imageFamily=family)
    if family is None:
        del obj["spec"]["imageFamily"]
    cluster.value = below
    first = await resolver.resolve(obj, now=T0)
    assert first["kubernetesVersion"] == below.lstrip("v")
    assert _definitions(first) == _archs(before)
    # The cluster is upgraded across the boundary: the next pass chooses for the new version.
    cluster.value = at
    second = await resolver.resolve({**obj, "status": first}, now=T0 + timedelta(hours=1))
    assert second["kubernetesVersion"] == at.lstrip("v")
    assert _definitions(second) == _archs(after)
    images = get_condition(second["conditions"], "ImagesReady")
    assert images is not None and images["status"] == "True"
    assert images["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert _status(second["conditions"], "Ready") == ("True", "Ready")
    AKSNodeClass.model_validate({**obj, "status": second})


async def test_a_version_that_does_not_parse_keeps_the_older_release(
    arm: FakeArm, resolver: AKSNodeClassResolver, cluster: ClusterVersion
) -> None:
    _seed_every_family(arm)
    cluster.value = "vnext"
    status = await resolver.resolve(_obj(imageFamily="Ubuntu"), now=T0)
    assert _definitions(status) == _archs(UBUNTU_2204)
    status = await resolver.resolve(_obj(imageFamily="AzureLinux"), now=T0)
    assert _definitions(status) == _archs(AZURE_LINUX_2)


async def test_no_cluster_version_resolves_no_images(
    resolver: AKSNodeClassResolver, cluster: ClusterVersion
) -> None:
    cluster.value = ""
    status = await resolver.resolve(_obj(), now=T0)
    assert "images" not in status
    assert _status(status["conditions"], "KubernetesVersionReady") == (
        "False",
        "KubernetesVersionUnknown",
    )
    assert _status(status["conditions"], "ImagesReady") == ("False", "KubernetesVersionNotReady")


async def test_an_image_family_with_no_published_version_is_not_ready(
    resolver: AKSNodeClassResolver,
) -> None:
    # Azure Linux 3 at 1.33.1, of which the gallery has no version.
    status = await resolver.resolve(_obj(imageFamily="AzureLinux"), now=T0)
    assert "images" not in status
    images = get_condition(status["conditions"], "ImagesReady")
    assert images is not None and images["reason"] == "ImagesNotFound"
    assert images["message"] == f"no versions of {AZURE_LINUX}/V3gen2, {AZURE_LINUX}/V3"
    assert _status(status["conditions"], "ValidationSucceeded") == ("True", "ValidationSucceeded")
    assert _status(status["conditions"], "Ready") == ("False", "UnhealthyDependents")


async def test_fips_needs_images_the_community_galleries_do_not_have(
    arm: FakeArm, resolver: AKSNodeClassResolver
) -> None:
    _seed_every_family(arm)
    obj = _obj(imageFamily="AzureLinux", fipsMode="FIPS")
    AKSNodeClass.model_validate(obj)
    status = await resolver.resolve(obj, now=T0)
    assert "images" not in status
    images = get_condition(status["conditions"], "ImagesReady")
    assert images is not None and images["reason"] == "SIGRequiredForFIPS"
    assert "shared image galleries" in images["message"]
    assert "fipsMode" in images["message"]


@pytest.mark.parametrize("family", ["Windows2022", "Windows2025"])
async def test_a_windows_class_fails_validation_and_says_what_to_use_instead(
    arm: FakeArm, resolver: AKSNodeClassResolver, family: str
) -> None:
    _seed_every_family(arm)
    obj = _obj(imageFamily=family)
    status = await resolver.resolve(obj, now=T0)
    assert "images" not in status
    conditions = status["conditions"]
    images = get_condition(conditions, "ImagesReady")
    assert images is not None and images["status"] == "False"
    assert images["reason"] == "ImageFamilyNotSupported"
    message = images["message"]
    assert message.startswith(f"imageFamily {family} cannot be launched in provision mode")
    assert "PROVISION_MODE=aksmachineapi" in message
    assert "not the community galleries" in message
    assert "use a Linux imageFamily (Ubuntu, Ubuntu2204, Ubuntu2404 or AzureLinux)" in message
    validation = get_condition(conditions, "ValidationSucceeded")
    assert validation is not None and validation["status"] == "False"
    assert validation["reason"] == "IncompatibleProvisionMode"
    assert f"imageFamily {family} is not supported" in validation["message"]
    ready = get_condition(conditions, "Ready")
    assert ready is not None and ready["status"] == "False"
    assert ready["message"] == "ImagesReady=False, ValidationSucceeded=False"
    AKSNodeClass.model_validate({**obj, "status": status})
    # No request went to look for a Windows image.
    assert ("GET", "image-versions") not in arm.state.calls


async def test_a_launch_uses_the_resolved_image_and_a_not_ready_class_none(
    arm: FakeArm,
    resolver: AKSNodeClassResolver,
    provider: AzureCloudProvider,
    classes: NodeClasses,
) -> None:
    status = await resolver.resolve(_obj(), now=T0)
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": status})
    await provider.create(claim())
    (vm,) = arm.state.of_kind("vm")
    assert vm["properties"]["storageProfile"]["imageReference"]["id"] == status["images"][0]["id"]

    bad = await resolver.resolve(_obj(vnetSubnetID=OTHER_SUBNET), now=T0)
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": bad})
    with pytest.raises(NodeClassNotReadyError, match="SubnetsReady=False"):
        await provider.create(claim("default-other"))
    windows = await resolver.resolve(_obj(imageFamily="Windows2022"), now=T0)
    classes.current = AKSNodeClass.model_validate(
        {**_obj(imageFamily="Windows2022"), "status": windows}
    )
    with pytest.raises(NodeClassNotReadyError, match="ValidationSucceeded=False"):
        await provider.create(claim("default-windows"))
    assert arm.state.calls[("PUT", "vm")] == 1


async def test_an_architecture_the_family_has_no_image_for_is_not_offered(
    arm: FakeArm,
    resolver: AKSNodeClassResolver,
    cluster: ClusterVersion,
    provider: AzureCloudProvider,
    classes: NodeClasses,
) -> None:
    # Azure Linux 3 (Kubernetes 1.32 on) has no arm64 image in the community gallery; an arm64
    # SKU, cheaper than every other, is in the region.
    _seed_every_family(arm)
    (d2s,) = [r for r in arm.state.skus[LOCATION] if r["name"] == "Standard_D2s_v3"]
    arm_sku = copy.deepcopy(d2s)
    arm_sku["name"] = "Standard_D2ps_v5"
    for capability in arm_sku["capabilities"]:
        if capability["name"] == "CpuArchitectureType":
            capability["value"] = "Arm64"
    arm.state.skus[LOCATION].append(arm_sku)
    provider.instance_types.set_prices(
        parse_prices(
            [
                {"armSkuName": "Standard_D2s_v3", "retailPrice": 0.1, "skuName": "D2s v3"},
                {"armSkuName": "Standard_D2ps_v5", "retailPrice": 0.05, "skuName": "D2ps v5"},
            ]
        )
    )
    nodepool = NodePool.model_validate(
        kit.nodepool("default", kind="AKSNodeClass", group="karpenter.azure.com", requirements=[])
    )
    cluster.value = "v1.31.8"
    obj = _obj(imageFamily="AzureLinux")
    status = await resolver.resolve(obj, now=T0)
    classes.current = AKSNodeClass.model_validate({**obj, "status": status})
    assert "Standard_D2ps_v5" in {it.name for it in await provider.get_instance_types(nodepool)}

    cluster.value = "v1.32.4"
    status = await resolver.resolve({**obj, "status": status}, now=T0)
    classes.current = AKSNodeClass.model_validate({**obj, "status": status})
    offered = {it.name for it in await provider.get_instance_types(nodepool)}
    assert "Standard_D2ps_v5" not in offered and "Standard_D2s_v3" in offered
    # A claim the arm64 SKU would have been cheapest for gets the amd64 one and its image.
    await provider.create(claim())
    (vm,) = arm.state.of_kind("vm")
    assert vm["properties"]["hardwareProfile"]["vmSize"] == "Standard_D2s_v3"
    image = vm["properties"]["storageProfile"]["imageReference"]["id"]
    assert image == f"/CommunityGalleries/{AZURE_LINUX}/images/V3gen2/versions/202502.03.0"
    # A claim that only the arm64 SKU satisfies finds no offering.
    with pytest.raises(InsufficientCapacityError):
        await provider.create(claim("default-arm", types=("Standard_D2ps_v5",)))
    # Before the images are resolved, such a launch fails with the reason, and nothing is made.
    classes.current = AKSNodeClass.model_validate(obj)
    with pytest.raises(CreateError, match="no arm64 image of imageFamily AzureLinux") as err:
        await provider.create(claim("default-arm", types=("Standard_D2ps_v5",)))
    assert err.value.reason == "ImageNotFound"
    assert arm.state.calls[("PUT", "vm")] == 1


async def test_an_old_kubelet_a_newer_image_or_another_subnet_drifts_the_vm(
    arm: FakeArm,
    resolver: AKSNodeClassResolver,
    provider: AzureCloudProvider,
    classes: NodeClasses,
) -> None:
    status = await resolver.resolve(_obj(), now=T0)
    classes.current = AKSNodeClass.model_validate({**_obj(), "status": status})
    launched = await provider.create(claim())
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
