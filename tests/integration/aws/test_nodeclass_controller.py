"""The EC2NodeClass controller on the local control plane with the moto server: an
EC2NodeClass gets its resolved status, conditions and hash annotations; a selector that matches
nothing turns it not Ready, naming the selector, and it is looked at again sooner."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from karpy.apis.descriptors import EC2NODECLASSES
from karpy.cloudprovider.aws.nodeclasscontroller import (
    NOT_READY_REQUEUE,
    READY_REQUEUE,
    EC2NodeClassController,
)
from karpy.kube import Cache, Client
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    DISCOVERY,
    ROLE,
    World,
    world,
)

pytestmark = pytest.mark.usefixtures("crds", "clean_cluster")


def manifest(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "subnetSelectorTerms": [{"tags": DISCOVERY}],
            "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": ROLE,
            **spec,
        },
    }


@pytest.fixture
async def running(
    kubeconfig: str,
    world: World,  # noqa: F811
) -> AsyncIterator[tuple[Client, Cache, EC2NodeClassController]]:
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    controller = EC2NodeClassController(
        client=client, nodeclasses=cache.informer(EC2NODECLASSES), resolver=world.resolver()
    )
    stop = asyncio.Event()
    task = asyncio.create_task(cache.start(stop))
    await cache.wait_for_sync()
    try:
        yield client, cache, controller
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()


async def seen(cache: Cache, generation: int) -> None:
    informer = cache.informer(EC2NODECLASSES)
    for _ in range(100):
        obj = informer.get("default")
        if obj is not None and obj["metadata"].get("generation") == generation:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the cache never saw generation {generation}")


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


async def test_status_conditions_and_hash_are_written(
    running: tuple[Client, Cache, EC2NodeClassController],
    world: World,  # noqa: F811
) -> None:
    client, cache, controller = running
    await client.create(EC2NODECLASSES, manifest())
    await seen(cache, 1)
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == READY_REQUEUE

    obj = await client.get(EC2NODECLASSES, "default")
    status = obj["status"]
    assert sorted(s["id"] for s in status["subnets"]) == sorted(world.subnets.values())
    assert [g["id"] for g in status["securityGroups"]] == [world.security_group]
    assert sorted(a["id"] for a in status["amis"]) == sorted(world.amis.values())
    assert status["instanceProfile"].startswith(f"{CLUSTER}_")
    found = conditions(obj)
    assert found["Ready"]["status"] == "True"
    assert {c["observedGeneration"] for c in found.values()} == {1}
    annotations = obj["metadata"]["annotations"]
    first_hash = annotations["karpenter.k8s.aws/ec2nodeclass-hash"]
    assert first_hash.isdigit()
    assert annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "karpy-v1"

    # Discovery fields are not hashed; a field that changes instances is.
    await client.patch(
        EC2NODECLASSES,
        "default",
        {"spec": {"subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "nope"}}]}},
    )
    await seen(cache, 2)
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == NOT_READY_REQUEUE
    obj = await client.get(EC2NODECLASSES, "default")
    found = conditions(obj)
    assert found["Ready"]["status"] == "False"
    assert found["SubnetsReady"]["reason"] == "SubnetsNotFound"
    assert '"karpenter.sh/discovery":"nope"' in found["SubnetsReady"]["message"]
    assert found["SubnetsReady"]["observedGeneration"] == 2
    assert "subnets" not in obj["status"]
    assert obj["metadata"]["annotations"]["karpenter.k8s.aws/ec2nodeclass-hash"] == first_hash

    await client.patch(EC2NODECLASSES, "default", {"spec": {"tags": {"team": "web"}}})
    await seen(cache, 3)
    await controller.reconcile("default")
    obj = await client.get(EC2NODECLASSES, "default")
    assert obj["metadata"]["annotations"]["karpenter.k8s.aws/ec2nodeclass-hash"] != first_hash
