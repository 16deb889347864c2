"""The issue's malformed-input table against moto: each bad input leaves the EC2NodeClass not
Ready with a condition whose message names what to fix, and nothing is launched (no CreateFleet,
not even validation's dry run). Rows not here yet: a capacity reservation in another zone and a
placement group that does not exist (karpy does not resolve either yet)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from karpy.cloudprovider.aws.clusterfacts import ClusterFacts
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    K8S,
    World,
    conditions,
    nodeclass_of,
    world,
)


async def no_cluster(world: World) -> None:  # noqa: F811
    async with world.clients.client("eks") as eks:
        await eks.delete_cluster(name=CLUSTER)


async def nothing(world: World) -> None:  # noqa: F811
    return None


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
