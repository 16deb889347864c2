"""The issue's malformed-input table against moto: each bad input leaves the EC2NodeClass not
Ready with a condition whose message names what to fix, and nothing is launched (no CreateFleet,
not even validation's dry run). moto has no placement groups or capacity reservations, so those
calls are answered at botocore's seam (`ec2answers.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from karpy.cloudprovider.aws.clusterfacts import ClusterFacts
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.types import InsufficientCapacityError
from tests.integration.aws.ec2answers import (
    FakePlacementGroups,
    FakeReservations,
    answer_ec2,
    placement_group,
    reservation,
)
from tests.integration.aws.test_capacity_reservations import reserved_claim
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    K8S,
    World,
    catalog,
    conditions,
    nodeclass_of,
    world,
)


async def no_cluster(world: World) -> None:  # noqa: F811
    async with world.clients.client("eks") as eks:
        await eks.delete_cluster(name=CLUSTER)


async def nothing(world: World) -> None:  # noqa: F811
    return None


async def no_placement_groups(world: World) -> None:  # noqa: F811
    """The account has placement groups, none of the name or id asked for (moto has no
    placement groups: DescribePlacementGroups is answered at botocore's seam)."""
    answer_ec2(
        world.counter,
        groups=FakePlacementGroups([placement_group("other", "pg-0aaaaaaaaaaaaaaaa")]),
    )


ROWS: list[tuple[str, dict[str, Any], Callable[[World], Awaitable[None]], str, str, str]] = [
    (
        "describe-cluster-error",
        {},
        no_cluster,
        "ValidationSucceeded",
        "ClusterCIDRResolutionFailed",
        f"DescribeCluster('{CLUSTER}') failed",
    ),
    (
        "unknown-alias-version",
        {"amiSelectorTerms": [{"alias": "al2023@v19990101"}]},
        nothing,
        "AMIsReady",
        "AMINotFound",
        "al2023@v19990101",
    ),
    (
        "placement-group-that-does-not-exist",
        {"placementGroupSelector": {"name": "no-such-group"}},
        no_placement_groups,
        "PlacementGroupReady",
        "PlacementGroupNotFound",
        'Placement group name "no-such-group" not found',
    ),
    (
        "placement-group-id-that-does-not-exist",
        {"placementGroupSelector": {"id": "pg-0123456789abcdef0"}},
        no_placement_groups,
        "PlacementGroupReady",
        "PlacementGroupNotFound",
        'Placement group id "pg-0123456789abcdef0" not found',
    ),
    (
        "role-that-does-not-exist",
        {"role": "NoSuchRole"},
        nothing,
        "InstanceProfileReady",
        "InstanceProfileCreationFailed",
        "spec.role 'NoSuchRole'",
    ),
]


@pytest.mark.parametrize(
    ("spec", "setup", "condition", "reason", "named"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
async def test_bad_input_names_the_fix_and_launches_nothing(
    world: World,  # noqa: F811
    spec: dict[str, Any],
    setup: Callable[[World], Awaitable[None]],
    condition: str,
    reason: str,
    named: str,
) -> None:
    await setup(world)
    resolver = NodeClassResolver(
        world.clients,
        cluster_name=CLUSTER,
        kubernetes_version=K8S,
        clock=world.clock,
        facts=ClusterFacts(world.clients, cluster_name=CLUSTER, clock=world.clock),
    )
    world.counter.calls.clear()
    result = await resolver.resolve(nodeclass_of(**spec))
    found = conditions(result)
    assert not result.ready and found["Ready"][0] == "False"
    status, got_reason, message = found[condition]
    assert (status, got_reason) == ("False", reason), found
    assert named in message, message
    assert world.counter.calls["ec2.CreateFleet"] == 0


async def test_reservation_in_another_zone_is_named_and_never_launched_into(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    """The table's reservation row. Karpenter keeps such a class Ready (its on-demand and spot
    offerings still launch) and `CapacityReservationsReady` True, so karpy does too; the
    condition's message names the reservation, its zone and the fix, and a NodeClaim that can
    only use that reservation is refused before any CreateFleet."""
    far = "cr-0bbbbbbbbbbbb0001"
    answer_ec2(
        world.counter,
        reservations=FakeReservations([reservation(far, zone="us-east-1d", available=5)]),
    )
    resolver = NodeClassResolver(
        world.clients, cluster_name=CLUSTER, kubernetes_version=K8S, clock=world.clock
    )
    spec = nodeclass_of(capacityReservationSelectorTerms=[{"id": far}])
    result = await resolver.resolve(spec)
    assert result.ready, conditions(result)
    status, _, message = conditions(result)["CapacityReservationsReady"]
    assert status == "True"
    assert f"{far} (m5.large) is in us-east-1d, where the class has no subnet" in message
    assert "add a subnet in us-east-1d to subnetSelectorTerms" in message

    nodeclass = result.apply(spec)
    catalog.reservations = resolver.reservations
    types = await catalog.for_nodeclass(nodeclass)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example"),
        unavailable=catalog.unavailable,
        reservations=resolver.reservations,
        reserved_capacity=True,
    )
    world.counter.calls.clear()
    claim = reserved_claim(
        "ml-1", "uid-1", ["reserved"], **{"karpenter.k8s.aws/capacity-reservation-id": [far]}
    )
    with pytest.raises(InsufficientCapacityError):
        await instances.create(claim, nodeclass, types)
    assert world.counter.calls["ec2.CreateFleet"] == 0
    assert world.counter.calls["ec2.CreateLaunchTemplate"] == 0
