"""Placement groups (`placementGroupSelector`) against the moto server, with
DescribePlacementGroups answered at botocore's seam (moto does not implement it;
`ec2answers.py`): `PlacementGroupReady`, and launches whose template places the instance in the
group and whose node carries the group's id."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.launch import LaunchTemplates
from karpy.cloudprovider.aws.provider import AWSCloudProvider
from karpy.cloudprovider.types import NodeClassNotReadyError
from tests.integration.aws.ec2answers import FakePlacementGroups, answer_ec2, placement_group
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    World,
    catalog,
    claim_of,
    conditions,
    nodeclass_of,
    world,
)

GROUP_ID = "pg-0123456789abcdef0"


@pytest.mark.parametrize(
    "selector", [{"name": "training"}, {"id": GROUP_ID}], ids=["by-name", "by-id"]
)
async def test_the_group_is_resolved_and_launched_into(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    selector: dict[str, str],
) -> None:
    groups = FakePlacementGroups([placement_group("training", GROUP_ID)])
    answer_ec2(world.counter, groups=groups)
    resolver = world.resolver()
    spec = nodeclass_of(placementGroupSelector=selector)
    result = await resolver.resolve(spec)
    assert result.ready, conditions(result)
    assert conditions(result)["PlacementGroupReady"][:2] == ("True", "PlacementGroupReady")
    nodeclass = result.apply(spec)
    types = await catalog.for_nodeclass(nodeclass)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name="prod", endpoint="https://prod.example"),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
        placement_groups=resolver.placement_groups,
    )
    launched = await instances.create(claim_of(), nodeclass, types)
    assert (launched.metadata.labels or {})["karpenter.k8s.aws/placement-group-id"] == GROUP_ID
    async with world.clients.client("ec2") as ec2:
        templates = (await ec2.describe_launch_templates())["LaunchTemplates"]
        datas: list[dict[str, Any]] = [
            (await ec2.describe_launch_template_versions(LaunchTemplateId=t["LaunchTemplateId"]))[
                "LaunchTemplateVersions"
            ][0]["LaunchTemplateData"]
            for t in templates
        ]
    assert datas and all(d["Placement"]["GroupId"] == GROUP_ID for d in datas)
    # The resolver's answer served the launch: one lookup within the minute.
    assert world.counter.calls["ec2.DescribePlacementGroups"] == 1

    # Drift: the same group is no drift; another group, or none, is PlacementGroupDrift.
    current = {"class": nodeclass}

    async def lookup(name: str) -> EC2NodeClass | None:
        return current["class"]

    provider = AWSCloudProvider(nodeclass_of=lookup, instance_types=catalog, instances=instances)
    assert await provider.is_drifted(launched) is None
    groups.items.append(placement_group("inference", "pg-0fedcba9876543210"))
    current["class"] = result.apply(nodeclass_of(placementGroupSelector={"name": "inference"}))
    assert await provider.is_drifted(launched) == "PlacementGroupDrift"
    current["class"] = result.apply(nodeclass_of())
    assert await provider.is_drifted(launched) == "PlacementGroupDrift"


async def test_a_group_not_available_is_not_ready_and_not_launched(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    groups = FakePlacementGroups([placement_group("training", GROUP_ID, state="deleting")])
    answer_ec2(world.counter, groups=groups)
    resolver = world.resolver()
    spec = nodeclass_of(placementGroupSelector={"name": "training"})
    result = await resolver.resolve(spec)
    status, reason, message = conditions(result)["PlacementGroupReady"]
    assert (status, reason) == ("False", "PlacementGroupNotAvailable")
    assert "'deleting'" in message and not result.ready

    # A class resolved while the group was there, launched after it went away.
    groups.items[0]["State"] = "available"
    world.clock.now += 61
    nodeclass = (await resolver.resolve(spec)).apply(spec)
    assert nodeclass.status is not None
    groups.items.clear()
    world.clock.now += 61
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name="prod", endpoint="https://prod.example"),
        unavailable=catalog.unavailable,
        placement_groups=resolver.placement_groups,
    )
    world.counter.calls.clear()
    with pytest.raises(NodeClassNotReadyError, match='placement group name "training" is not'):
        await instances.create(claim_of(), nodeclass, await catalog.for_nodeclass(nodeclass))
    assert world.counter.calls["ec2.CreateFleet"] == 0


async def test_a_partition_group_offers_each_partition_and_launches_into_the_one_asked(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    groups = FakePlacementGroups(
        [placement_group("shards", GROUP_ID, strategy="partition", partitions=3)]
    )
    answer_ec2(world.counter, groups=groups)
    resolver = world.resolver()
    spec = nodeclass_of(placementGroupSelector={"name": "shards"})
    result = await resolver.resolve(spec)
    assert result.ready, conditions(result)
    nodeclass = result.apply(spec)
    catalog.placement_groups = resolver.placement_groups
    try:
        plain = {it.name: it for it in await catalog.list()}
        types = await catalog.for_nodeclass(nodeclass)
        assert await catalog.for_nodeclass(nodeclass) is types  # shared by launches
    finally:
        catalog.placement_groups = None
    m5 = next(it for it in types if it.name == "m5.large")
    assert len(m5.offerings) == 3 * len(plain["m5.large"].offerings)
    partitions = {
        o.requirements.labels()["karpenter.k8s.aws/placement-group-partition"] for o in m5.offerings
    }
    assert partitions == {"1", "2", "3"}

    instances = AWSInstances(
        world.clients,
        ClusterInfo(name="prod", endpoint="https://prod.example"),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
        placement_groups=resolver.placement_groups,
    )
    pinned = await instances.create(
        claim_of(**{"karpenter.k8s.aws__placement-group-partition": ["2", "3"]}), nodeclass, types
    )
    labels = pinned.metadata.labels or {}
    assert labels["karpenter.k8s.aws/placement-group-partition"] == "2"
    free = await instances.create(claim_of("free-abcde", "uid-free"), nodeclass, types)
    assert "karpenter.k8s.aws/placement-group-partition" not in (free.metadata.labels or {})
    async with world.clients.client("ec2") as ec2:
        templates = (await ec2.describe_launch_templates())["LaunchTemplates"]
        placements = [
            (await ec2.describe_launch_template_versions(LaunchTemplateId=t["LaunchTemplateId"]))[
                "LaunchTemplateVersions"
            ][0]["LaunchTemplateData"]["Placement"]
            for t in templates
        ]
    assert {"GroupId": GROUP_ID, "PartitionNumber": 2} in placements
    assert {"GroupId": GROUP_ID} in placements  # EC2 picks the partition
