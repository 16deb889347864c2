"""Hyper-V generation 1 node images against the fake ARM, with the real SDK clients: an
AKSNodeClass's `status.images` carry each family's generation 1 image with its architecture and
generation requirements, and a size whose SKU boots only generation 1 launches with it while a
size that boots both gets the generation 2 image, resolved or not; a SKU record that lists no
generation is neither offered nor launched."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.v1 import NodePool
from karpy.cloudprovider.azure.nodeclassstatus import AKSNodeClassResolver
from karpy.cloudprovider.azure.pricing import parse_prices
from karpy.cloudprovider.azure.provider import AzureCloudProvider
from karpy.cloudprovider.types import CreateError
from tests import kit
from tests.integration.azure.cluster import LOCATION, SUBNET, NodeClasses, claim
from tests.integration.azure.fakearm import AZURE_LINUX_GALLERY, UBUNTU_GALLERY, FakeArm
from tests.integration.azure.nodeboot import read_custom_data

HYPERV = azure.LABEL_SKU_HYPERV_GENERATION
VERSION = "202502.03.0"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
GEN1_ONLY = "Standard_A4_v2"
BOTH = "Standard_D2s_v3"
NO_GENERATION = "Standard_D2as_v4"


def _requirements(arch: str, generation: str) -> list[dict[str, Any]]:
    return [
        {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]},
        {"key": HYPERV, "operator": "In", "values": [generation]},
    ]


def _image(gallery: str, definition: str, version: str = VERSION) -> str:
    return f"/CommunityGalleries/{gallery}/images/{definition}/versions/{version}"


def _add_sku(arm: FakeArm, name: str, *, generations: str | None, vcpus: int, memory: int) -> None:
    """A copy of the region's D2s_v3 record as `name`, listing `generations` as its
    `HyperVGenerations` (None: without the capability)."""
    (d2s,) = [r for r in arm.state.skus[LOCATION] if r["name"] == BOTH]
    record = copy.deepcopy(d2s)
    record["name"] = name
    record["size"] = name.removeprefix("Standard_")
    caps = {
        "vCPUs": str(vcpus),
        "MemoryGB": str(memory),
        "HyperVGenerations": generations,
    }
    record["capabilities"] = [
        {"name": c["name"], "value": caps.get(c["name"], c["value"])}
        for c in record["capabilities"]
        if not (c["name"] == "HyperVGenerations" and generations is None)
    ]
    arm.state.skus[LOCATION].append(record)


@pytest.fixture
def resolver(
    arm: FakeArm, compute: ComputeManagementClient, network: NetworkManagementClient
) -> AKSNodeClassResolver:
    arm.state.subnets.add(SUBNET.lower())
    arm.state.publish_node_images(VERSION)

    async def version() -> str:
        return "v1.33.2"

    return AKSNodeClassResolver(
        compute=compute,
        network=network,
        location=LOCATION,
        default_subnet_id=SUBNET,
        kubernetes_version=version,
    )


@pytest.fixture
def sizes(arm: FakeArm, provider: AzureCloudProvider) -> AzureCloudProvider:
    """The provider with a generation 1 only size, the cheapest fit, and a size whose record
    lists no generation, cheaper still, in the region."""
    _add_sku(arm, GEN1_ONLY, generations="V1", vcpus=4, memory=8)
    _add_sku(arm, NO_GENERATION, generations=None, vcpus=2, memory=8)
    provider.instance_types.set_prices(
        parse_prices(
            [
                {"armSkuName": NO_GENERATION, "retailPrice": 0.02, "skuName": "D2as v4"},
                {"armSkuName": GEN1_ONLY, "retailPrice": 0.05, "skuName": "A4 v2"},
                {"armSkuName": BOTH, "retailPrice": 0.1, "skuName": "D2s v3"},
            ]
        )
    )
    return provider


def _obj(family: str = "Ubuntu2204") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "default", "generation": 1},
        "spec": {"imageFamily": family},
    }


def _class(status: dict[str, Any] | None = None, family: str = "Ubuntu2204") -> AKSNodeClass:
    """The class as the provider reads it (validated as the apiserver would admit it)."""
    obj = _obj(family)
    if status is not None:
        obj["status"] = status
    return AKSNodeClass.model_validate(obj)


def _launched_vm(arm: FakeArm, name: str) -> dict[str, Any]:
    (vm,) = [v for v in arm.state.of_kind("vm") if v["name"] == f"aks-{name}"]
    return vm


def _node_labels(vm: dict[str, Any]) -> dict[str, str]:
    """The labels the VM's kubelet registers its Node with (`--node-labels`)."""
    boot = read_custom_data(vm["properties"]["osProfile"]["customData"]).variables
    return dict(p.split("=", 1) for p in boot["KUBELET_NODE_LABELS"].split(","))


@pytest.mark.parametrize(
    ("family", "gallery", "definitions"),
    [
        (
            "Ubuntu2204",
            UBUNTU_GALLERY,
            ["2204gen2containerd", "2204containerd", "2204gen2arm64containerd"],
        ),
        (
            "Ubuntu2404",
            UBUNTU_GALLERY,
            ["2404gen2containerd", "2404containerd", "2404gen2arm64containerd"],
        ),
        # Azure Linux 3 at this version (1.33): no arm64 image in the community gallery.
        ("AzureLinux", AZURE_LINUX_GALLERY, ["V3gen2", "V3"]),
    ],
)
async def test_status_images_carry_the_generation_1_image_with_both_requirements(
    resolver: AKSNodeClassResolver, family: str, gallery: str, definitions: list[str]
) -> None:
    status = await resolver.resolve(_obj(family), now=T0)
    gen2, gen1, *arm64 = definitions
    expected = [
        {"id": _image(gallery, gen2), "requirements": _requirements("amd64", "2")},
        {"id": _image(gallery, gen1), "requirements": _requirements("amd64", "1")},
    ]
    expected += [
        {"id": _image(gallery, d), "requirements": _requirements("arm64", "2")} for d in arm64
    ]
    assert status["images"] == expected
    # The AKSNodeClass admits it as its status.
    _class(status, family)


async def test_a_generation_1_only_size_launches_with_the_generation_1_image(
    arm: FakeArm,
    resolver: AKSNodeClassResolver,
    sizes: AzureCloudProvider,
    classes: NodeClasses,
) -> None:
    status = await resolver.resolve(_obj(), now=T0)
    classes.current = _class(status)
    nodepool = NodePool.model_validate(
        kit.nodepool("default", kind="AKSNodeClass", group="karpenter.azure.com", requirements=[])
    )
    offered = {it.name for it in await sizes.get_instance_types(nodepool)}
    assert {GEN1_ONLY, BOTH} <= offered
    # No image boots a size whose record lists no generation: it is not offered, though cheapest.
    assert NO_GENERATION not in offered

    # The cheapest fit boots only generation 1: it gets 22.04's generation 1 image.
    gen1 = await sizes.create(claim("default-gen1"))
    vm = _launched_vm(arm, "default-gen1")
    assert vm["properties"]["hardwareProfile"]["vmSize"] == GEN1_ONLY
    image = vm["properties"]["storageProfile"]["imageReference"]["id"]
    assert image == _image(UBUNTU_GALLERY, "2204containerd")
    # Its one generation is on the node, as upstream writes single-valued requirements.
    assert (gen1.metadata.labels or {})[HYPERV] == "1"
    assert _node_labels(vm)[HYPERV] == "1"

    # A size that boots both generations gets the generation 2 image, and no generation label.
    both = await sizes.create(claim("default-both", types=(BOTH,)))
    vm = _launched_vm(arm, "default-both")
    assert vm["properties"]["hardwareProfile"]["vmSize"] == BOTH
    image = vm["properties"]["storageProfile"]["imageReference"]["id"]
    assert image == _image(UBUNTU_GALLERY, "2204gen2containerd")
    assert HYPERV not in (both.metadata.labels or {})
    assert HYPERV not in _node_labels(vm)
    assert arm.state.calls[("PUT", "vm")] == 2


@pytest.mark.parametrize(
    ("family", "gallery", "gen2", "gen1"),
    [
        ("Ubuntu2204", UBUNTU_GALLERY, "2204gen2containerd", "2204containerd"),
        # The cluster is at 1.33.2: AzureLinux means Azure Linux 3.
        ("AzureLinux", AZURE_LINUX_GALLERY, "V3gen2", "V3"),
    ],
)
async def test_before_the_images_are_resolved_the_size_s_generation_picks_the_latest_image(
    arm: FakeArm,
    sizes: AzureCloudProvider,
    classes: NodeClasses,
    family: str,
    gallery: str,
    gen2: str,
    gen1: str,
) -> None:
    classes.current = _class(family=family)
    await sizes.create(claim("default-gen1", types=(GEN1_ONLY,)))
    vm = _launched_vm(arm, "default-gen1")
    assert vm["properties"]["storageProfile"]["imageReference"]["id"] == _image(
        gallery, gen1, "latest"
    )
    await sizes.create(claim("default-both", types=(BOTH,)))
    vm = _launched_vm(arm, "default-both")
    assert vm["properties"]["storageProfile"]["imageReference"]["id"] == _image(
        gallery, gen2, "latest"
    )
    # A size whose record lists no generation gets no image: the launch fails with the reason.
    with pytest.raises(CreateError, match="its SKU lists no HyperVGenerations") as err:
        await sizes.create(claim("default-none", types=(NO_GENERATION,)))
    assert err.value.reason == "ImageNotFound"
    assert arm.state.calls[("PUT", "vm")] == 2
