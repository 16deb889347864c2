"""The AWS `CloudProvider` adapter against the moto server: built from karpy's settings, it finds
a NodePool's and a NodeClaim's EC2NodeClass and launches, reads, lists and terminates instances.
"""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.v1 import NodePool
from karpy.cloudprovider.aws.instances import instance_id_of
from karpy.cloudprovider.aws.plugin import build_aws_provider, kubernetes_version
from karpy.cloudprovider.aws.provider import AWSCloudProvider
from karpy.cloudprovider.types import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpy.settings import load_settings
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    ZONES,
    World,
    claim_of,
    describe,
    nodeclass_of,
    world,
)


def nodepool_of(nodeclass: str = "default", **ref: str) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [],
                        "nodeClassRef": {
                            "group": ref.get("group", "karpenter.k8s.aws"),
                            "kind": ref.get("kind", "EC2NodeClass"),
                            "name": nodeclass,
                        },
                    }
                }
            },
        }
    )


@pytest.fixture
async def provider(world: World) -> tuple[AWSCloudProvider, dict[str, EC2NodeClass]]:  # noqa: F811
    classes: dict[str, EC2NodeClass] = {}

    async def nodeclass_of_name(name: str) -> EC2NodeClass | None:
        return classes.get(name)

    settings = load_settings(
        {"PROVIDER": "aws", "CLUSTER_NAME": CLUSTER, "VM_MEMORY_OVERHEAD_PERCENT": "0.1"}
    )
    built = build_aws_provider(
        settings,
        clients=world.clients,
        cluster_endpoint="https://prod.example",
        kubernetes_version="1.33",
        nodeclass_of=nodeclass_of_name,
    )
    assert built.resolver is not None
    classes["default"] = (await built.resolver.resolve(nodeclass_of())).apply(nodeclass_of())
    return built, classes


async def test_instance_types_follow_the_nodepools_nodeclass(
    provider: tuple[AWSCloudProvider, dict[str, EC2NodeClass]],
) -> None:
    aws, _ = provider
    types = await aws.get_instance_types(nodepool_of())
    assert len(types) > 100
    m5 = next(t for t in types if t.name == "m5.large")
    assert {o.zone for o in m5.offerings if o.available} == set(ZONES)
    assert await aws.get_instance_types(nodepool_of("missing")) == []
    assert await aws.get_instance_types(nodepool_of(group="karpenter.kwok.sh", kind="K")) == []


async def test_create_get_list_delete(
    world: World,  # noqa: F811
    provider: tuple[AWSCloudProvider, dict[str, EC2NodeClass]],
) -> None:
    aws, _ = provider
    launched = await aws.create(claim_of())
    assert launched.status is not None and launched.status.provider_id
    provider_id = launched.status.provider_id
    instance_id = instance_id_of(provider_id)
    assert instance_id is not None
    instance = await describe(world, instance_id)
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert tags["karpenter.sh/nodeclaim"] == "default-abcde"
    assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
    assert instance["InstanceType"] == "m5.large"
    assert (launched.metadata.labels or {})["node.kubernetes.io/instance-type"] == "m5.large"

    got = await aws.get(provider_id)
    assert got.status is not None and got.status.provider_id == provider_id
    assert [c.status.provider_id for c in await aws.list() if c.status] == [provider_id]

    await aws.delete(launched)
    assert (await describe(world, instance_id))["State"]["Name"] in ("shutting-down", "terminated")
    with pytest.raises(NodeClaimNotFoundError):
        await aws.delete(launched)


async def test_create_refuses_a_missing_or_terminating_nodeclass(
    provider: tuple[AWSCloudProvider, dict[str, EC2NodeClass]],
) -> None:
    aws, classes = provider
    missing = claim_of()
    missing.spec.node_class_ref.name = "missing"
    with pytest.raises(InsufficientCapacityError, match='EC2NodeClass "missing" not found'):
        await aws.create(missing)
    terminating: dict[str, Any] = classes["default"].to_dict()
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    classes["default"] = EC2NodeClass.model_validate(terminating)
    with pytest.raises(NodeClassNotReadyError, match="terminating"):
        await aws.create(claim_of())


def test_kubernetes_version_of_the_apiserver() -> None:
    assert kubernetes_version({"major": "1", "minor": "33+"}) == "1.33"
