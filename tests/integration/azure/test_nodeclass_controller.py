"""The AKSNodeClass status controller on the local control plane with the fake ARM: the status
the resolver finds is written through the status subresource (so the apiserver checks it against
the CRD), the images are chosen for the control plane's own Kubernetes version, a class that
fails validation is not Ready, and a class that is not Ready is looked at again sooner."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient

from karpy.apis.descriptors import AKSNODECLASSES, NODECLAIMS
from karpy.cloudprovider.azure.nodeclassstatus import (
    IN_USE_REQUEUE,
    NOT_READY_REQUEUE,
    READY_REQUEUE,
    AKSNodeClassController,
    AKSNodeClassResolver,
)
from karpy.kube import Cache, Client, NotFoundError
from tests.integration.azure.cluster import (
    LOCATION,
    OTHER_SUBNET,
    SUBNET,
    UBUNTU_2204,
    UBUNTU_2404,
)
from tests.integration.azure.fakearm import UBUNTU_GALLERY, FakeArm
from tests.kit import nodeclaim

pytestmark = pytest.mark.usefixtures("crds", "clean_cluster")


def manifest(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "default"},
        "spec": {"imageFamily": "Ubuntu2204", **spec},
    }


@pytest.fixture
async def running(
    kubeconfig: str,
    arm: FakeArm,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
) -> AsyncIterator[tuple[Client, Cache, AKSNodeClassController]]:
    arm.state.subnets.add(SUBNET.lower())
    for definition in UBUNTU_2204 + UBUNTU_2404:
        arm.state.images[(UBUNTU_GALLERY, definition)] = ["202501.12.0"]
    client = await Client.connect(kubeconfig=kubeconfig)

    async def version() -> str:
        return str((await client.server_version())["gitVersion"])

    cache = Cache(client)
    controller = AKSNodeClassController(
        client=client,
        nodeclasses=cache.informer(AKSNODECLASSES),
        nodeclaims=cache.informer(NODECLAIMS),
        resolver=AKSNodeClassResolver(
            compute=compute,
            network=network,
            location=LOCATION,
            default_subnet_id=SUBNET,
            kubernetes_version=version,
        ),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(cache.start(stop))
    await cache.wait_for_sync()
    try:
        yield client, cache, controller
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await client.close()


async def seen(cache: Cache, generation: int) -> None:
    informer = cache.informer(AKSNODECLASSES)
    for _ in range(600):
        obj = informer.get("default")
        if obj is not None and obj["metadata"].get("generation") == generation:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the cache never saw generation {generation}")


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


async def test_the_status_is_written_and_follows_the_subnet(
    running: tuple[Client, Cache, AKSNodeClassController],
) -> None:
    client, cache, controller = running
    await client.create(AKSNODECLASSES, manifest())
    await seen(cache, 1)
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == READY_REQUEUE
    obj = await client.get(AKSNODECLASSES, "default")
    assert obj["metadata"]["finalizers"] == ["karpenter.azure.com/termination"]
    server = await client.server_version()
    assert obj["status"]["kubernetesVersion"] == str(server["gitVersion"]).lstrip("v")
    assert [i["id"].rsplit("/", 1)[1] for i in obj["status"]["images"]] == ["202501.12.0"] * 3
    found = conditions(obj)
    assert {t: c["status"] for t, c in found.items()} == {
        "ImagesReady": "True",
        "KubernetesVersionReady": "True",
        "SubnetsReady": "True",
        "ValidationSucceeded": "True",
        "Ready": "True",
    }

    await client.patch(AKSNODECLASSES, "default", {"spec": {"vnetSubnetID": OTHER_SUBNET}})
    await seen(cache, 2)
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == NOT_READY_REQUEUE
    found = conditions(await client.get(AKSNODECLASSES, "default"))
    assert found["SubnetsReady"]["reason"] == "SubnetNotFound"
    assert found["SubnetsReady"]["observedGeneration"] == 2
    assert (found["Ready"]["status"], found["Ready"]["message"]) == ("False", "SubnetsReady=False")


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


async def test_a_windows_class_fails_validation_and_a_linux_one_passes(
    running: tuple[Client, Cache, AKSNodeClassController],
) -> None:
    client, cache, controller = running
    await client.create(AKSNODECLASSES, manifest(imageFamily="Windows2025"))
    await seen(cache, 1)
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == NOT_READY_REQUEUE
    obj = await client.get(AKSNODECLASSES, "default")
    assert "images" not in obj["status"]
    found = conditions(obj)
    validation = found["ValidationSucceeded"]
    assert (validation["status"], validation["reason"]) == ("False", "IncompatibleProvisionMode")
    assert "PROVISION_MODE=aksmachineapi" in validation["message"]
    assert validation["observedGeneration"] == 1
    assert (found["ImagesReady"]["status"], found["ImagesReady"]["reason"]) == (
        "False",
        "ImageFamilyNotSupported",
    )
    assert "use a Linux imageFamily" in found["ImagesReady"]["message"]
    assert (found["Ready"]["status"], found["Ready"]["message"]) == (
        "False",
        "ImagesReady=False, ValidationSucceeded=False",
    )

    # The default family on this control plane's own version passes, with the images AKS's
    # default Ubuntu means at that version.
    await client.patch(AKSNODECLASSES, "default", {"spec": {"imageFamily": "Ubuntu"}})
    await seen(cache, 2)
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == READY_REQUEUE
    obj = await client.get(AKSNODECLASSES, "default")
    found = conditions(obj)
    assert {t: (c["status"], c["observedGeneration"]) for t, c in found.items()} == {
        t: ("True", 2)
        for t in (
            "ImagesReady",
            "KubernetesVersionReady",
            "SubnetsReady",
            "ValidationSucceeded",
            "Ready",
        )
    }
    server = str((await client.server_version())["gitVersion"])
    expected = UBUNTU_2404 if _minor(server) >= (1, 34) else UBUNTU_2204
    assert [i["id"].split("/")[4] for i in obj["status"]["images"]] == expected


async def test_a_deleted_class_waits_for_its_nodeclaims(
    running: tuple[Client, Cache, AKSNodeClassController],
) -> None:
    client, cache, controller = running
    await client.create(AKSNODECLASSES, manifest())
    await seen(cache, 1)
    await controller.reconcile("default")
    await client.create(
        NODECLAIMS,
        nodeclaim("default-abcde", kind="AKSNodeClass", group="karpenter.azure.com"),
    )
    await client.delete(AKSNODECLASSES, "default")
    claims = cache.informer(NODECLAIMS)
    for _ in range(600):
        obj = cache.informer(AKSNODECLASSES).get("default")
        if obj and obj["metadata"].get("deletionTimestamp") and claims.get("default-abcde"):
            break
        await asyncio.sleep(0.05)
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == IN_USE_REQUEUE
    assert (await client.get(AKSNODECLASSES, "default"))["metadata"]["finalizers"]

    await client.delete(NODECLAIMS, "default-abcde")
    for _ in range(600):
        if claims.get("default-abcde") is None:
            break
        await asyncio.sleep(0.05)
    assert await controller.reconcile("default") is None
    with pytest.raises(NotFoundError):
        await client.get(AKSNODECLASSES, "default")
