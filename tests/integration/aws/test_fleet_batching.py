"""CreateFleet batching against a moto server: equal launches of several NodeClaims share one
CreateFleet (counted at the client seam), each NodeClaim gets its own instance tagged with its
name, a retry launches nothing new, and a partial or failed answer reaches the right NodeClaims
(injected at the client seam: botocore `before-call` handlers may answer a call themselves).
"""

from __future__ import annotations

import asyncio
from typing import Any

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.instances import AWSInstances, instance_id_of
from karpy.cloudprovider.aws.launch import LaunchTemplates
from karpy.cloudprovider.types import CreateError, InsufficientCapacityError
from tests.integration.aws.conftest import REGION
from tests.integration.aws.test_launch import (  # noqa: F401 (fixtures)
    Launcher,
    World,
    _Http,
    catalog,
    claim_of,
    describe,
    ice_errors,
    launcher,
    world,
)

WINDOW = {"fleet_idle": 2.0, "fleet_max_wait": 20.0}
"""A wide batching window: on a loaded machine the launches of one burst reach CreateFleet
further apart than the production 35 ms."""


def batched(on: World, made: Launcher, clients: AWSClients | None = None) -> AWSInstances:
    """AWSInstances as the `launcher` fixture makes them, with the wide window."""
    return AWSInstances(
        clients or on.clients,
        made.instances.cluster,
        unavailable=made.unavailable,
        launch_templates=LaunchTemplates(clients or on.clients),
        **WINDOW,
    )


def _tags(instance: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags") or ()}


async def test_equal_launches_share_one_fleet_and_each_gets_its_own_instance(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
) -> None:
    instances = batched(world, launcher)
    claims = [claim_of(f"batch-{i}", f"uid-batch-{i}") for i in range(12)]
    launched = await asyncio.gather(
        *(instances.create(c, launcher.nodeclass, launcher.types) for c in claims)
    )
    assert world.counter.calls["ec2.CreateFleet"] == 1
    ids = [instance_id_of(r.status.provider_id or "") if r.status else None for r in launched]
    assert None not in ids and len(set(ids)) == 12
    for claim, instance_id in zip(claims, ids, strict=True):
        assert instance_id is not None
        tags = _tags(await describe(world, instance_id))
        assert tags["karpenter.sh/nodeclaim"] == claim.name == tags["Name"]
        assert tags["karpenter.sh/nodepool"] == "default"
    assert len(await launcher.instances.list()) == 12

    # A retry of any of them (the lifecycle controller retries after a failed status write)
    # finds its instance instead of launching again.
    again = await instances.create(claims[5], launcher.nodeclass, launcher.types)
    assert again.status and again.status.provider_id == launched[5].status.provider_id  # type: ignore[union-attr]
    assert world.counter.calls["ec2.CreateFleet"] == 1
    assert len(await launcher.instances.list()) == 12


async def test_different_requests_are_not_merged(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
) -> None:
    instances = batched(world, launcher)
    await asyncio.gather(
        instances.create(claim_of("a-1", "u-a-1"), launcher.nodeclass, launcher.types),
        instances.create(claim_of("a-2", "u-a-2"), launcher.nodeclass, launcher.types),
        instances.create(
            claim_of("b-1", "u-b-1", topology_kubernetes_io__zone=["us-east-1b"]),
            launcher.nodeclass,
            launcher.types,
        ),
    )
    assert world.counter.calls["ec2.CreateFleet"] == 2
    assert len(await launcher.instances.list()) == 3


class FailTags:
    """Answers CreateTags with an error while `failing` (a throttled or refused call)."""

    def __init__(self) -> None:
        self.failing = True

    def hook(self, service: str, client: Any) -> None:
        if service != "ec2":
            return

        def answer(**_: Any) -> tuple[Any, dict[str, Any]] | None:
            if not self.failing:
                return None
            http = _Http()
            http.status_code = 400
            error = {"Code": "UnauthorizedOperation", "Message": "not allowed"}
            return http, {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}

        client.meta.events.register("before-call.ec2.CreateTags", answer)


async def test_a_retry_after_a_failed_tagging_finds_the_instance_by_id_and_tags_it(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
    moto_endpoint: str,
) -> None:
    fail = FailTags()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=fail.hook)
    instances = batched(world, launcher, clients)
    claims = [claim_of(f"t-{i}", f"uid-t-{i}") for i in range(3)]
    try:
        first = await asyncio.gather(
            *(instances.create(c, launcher.nodeclass, launcher.types) for c in claims)
        )
        instance_id = instance_id_of(first[1].status.provider_id or "")  # type: ignore[union-attr]
        assert instance_id is not None
        assert "karpenter.sh/nodeclaim" not in _tags(await describe(world, instance_id))
        fail.failing = False
        again = await instances.create(claims[1], launcher.nodeclass, launcher.types)
    finally:
        await clients.close()
    assert again.status and again.status.provider_id == first[1].status.provider_id  # type: ignore[union-attr]
    assert _tags(await describe(world, instance_id))["karpenter.sh/nodeclaim"] == "t-1"
    assert len(await launcher.instances.list()) == 3


class ShortFleet:
    """Answers a CreateFleet for N instances with N-1 (IDs EC2 never made) and an ICE error for
    every override (an `instant` fleet's partial answer); records the asked capacity."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.requests: list[dict[str, Any]] = []

    def hook(self, service: str, client: Any) -> None:
        if service != "ec2":
            return

        def capture(params: dict[str, Any], **_: Any) -> None:
            self.requests.append(params)

        def answer(**_: Any) -> tuple[Any, dict[str, Any]]:
            request = self.requests[-1]
            asked = request["TargetCapacitySpecification"]["TotalTargetCapacity"]
            self.asked.append(asked)
            overrides = [o for c in request["LaunchTemplateConfigs"] for o in c["Overrides"]]
            return _Http(), {
                "FleetId": "fleet-short",
                "Instances": [
                    {
                        "InstanceIds": [f"i-0short{i}" for i in range(asked - 1)],
                        "InstanceType": overrides[0]["InstanceType"],
                        "Lifecycle": "on-demand",
                        "LaunchTemplateAndOverrides": {"Overrides": overrides[0]},
                    }
                ],
                "Errors": ice_errors(overrides[1:]),
            }

        client.meta.events.register("before-parameter-build.ec2.CreateFleet", capture)
        client.meta.events.register("before-call.ec2.CreateFleet", answer)


async def test_fewer_instances_than_asked_fail_only_the_claims_left_without_one(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
    moto_endpoint: str,
) -> None:
    short = ShortFleet()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=short.hook)
    instances = batched(world, launcher, clients)
    claims = [claim_of(f"s-{i}", f"uid-s-{i}") for i in range(4)]
    try:
        results = await asyncio.gather(
            *(instances.create(c, launcher.nodeclass, launcher.types) for c in claims),
            return_exceptions=True,
        )
    finally:
        await clients.close()
    assert short.asked == [4]
    failed = [r for r in results if isinstance(r, BaseException)]
    assert len(failed) == 1 and isinstance(failed[0], InsufficientCapacityError)
    assert "InsufficientInstanceCapacity" in str(failed[0])
    given = {
        r.status.provider_id.rsplit("/", 1)[-1]
        for r in results
        if not isinstance(r, BaseException) and r.status and r.status.provider_id
    }
    assert given == {"i-0short0", "i-0short1", "i-0short2"}
    # The errors name the offerings without capacity (m5.xlarge's, and m5.large elsewhere).
    assert launcher.unavailable.is_unavailable("on-demand", "m5.xlarge", "us-east-1a")


class RefuseFleet:
    """Answers every CreateFleet with a client error."""

    def __init__(self) -> None:
        self.calls = 0

    def hook(self, service: str, client: Any) -> None:
        if service != "ec2":
            return

        def answer(**_: Any) -> tuple[Any, dict[str, Any]]:
            self.calls += 1
            http = _Http()
            http.status_code = 400
            error = {"Code": "InvalidParameterValue", "Message": "bad subnet"}
            return http, {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}

        client.meta.events.register("before-call.ec2.CreateFleet", answer)


async def test_a_failed_batched_call_fails_every_claim_of_the_batch(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
    moto_endpoint: str,
) -> None:
    refuse = RefuseFleet()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=refuse.hook)
    instances = batched(world, launcher, clients)
    claims = [claim_of(f"r-{i}", f"uid-r-{i}") for i in range(3)]
    try:
        results = await asyncio.gather(
            *(instances.create(c, launcher.nodeclass, launcher.types) for c in claims),
            return_exceptions=True,
        )
    finally:
        await clients.close()
    assert refuse.calls == 1
    assert all(isinstance(r, CreateError) for r in results)
    assert all("bad subnet" in str(r) for r in results)
    assert await launcher.instances.list() == []
