"""The EC2NodeClass controller on the local control plane with the moto server: an
EC2NodeClass gets its resolved status, conditions, finalizer and Karpenter's hash annotations; a
selector that matches nothing turns it not Ready, naming the selector, and it is looked at again
sooner; a deleted class waits for its NodeClaims, then its instance profile and launch templates
are deleted; another hash version re-stamps its NodeClaims; launch templates left unused while
the class lives are deleted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.descriptors import EC2NODECLASSES, NODECLAIMS
from karpy.cloudprovider.aws.cleanup import NodeClassCleanup
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.launch import LaunchTemplates
from karpy.cloudprovider.aws.launchtemplategc import PERIOD as LAUNCH_TEMPLATE_GC_PERIOD
from karpy.cloudprovider.aws.launchtemplategc import LaunchTemplateGC
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.nodeclasscontroller import (
    IN_USE_REQUEUE,
    NOT_READY_REQUEUE,
    READY_REQUEUE,
    EC2NodeClassController,
)
from karpy.cloudprovider.aws.nodeclasshash import nodeclass_hash
from karpy.cloudprovider.aws.plugin import build_aws_provider
from karpy.cloudprovider.aws.profilegc import InstanceProfileGC
from karpy.cloudprovider.aws.reservationcapacitytype import ReservationCapacityType
from karpy.cloudprovider.aws.reservationexpiry import ReservationExpiration
from karpy.cloudprovider.aws.reservations import CapacityReservations
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.cloudprovider.types import NodeClassNotReadyError
from karpy.kube import Cache, Client, FakeClock, NotFoundError
from karpy.kube.resources import NODES
from karpy.settings import load_settings
from tests.integration.aws.conftest import REGION
from tests.integration.aws.ec2answers import FakeReservations, answer_ec2, reservation
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    DISCOVERY,
    K8S,
    ROLE,
    World,
    claim_of,
    world,
)
from tests.kit import node, nodeclaim

pytestmark = pytest.mark.usefixtures("crds", "clean_cluster")

CA_BUNDLE = "Q0EgQlVORExF"


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
        client=client,
        nodeclasses=cache.informer(EC2NODECLASSES),
        nodeclaims=cache.informer(NODECLAIMS),
        resolver=world.resolver(),
        cleanup=NodeClassCleanup(world.clients, cluster_name=CLUSTER),
        ca_bundle=CA_BUNDLE,
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
    assert annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v6"
    assert first_hash == nodeclass_hash(obj, CA_BUNDLE)
    assert obj["metadata"]["finalizers"] == ["karpenter.k8s.aws/termination"]

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


EC2_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"}


def ec2_nodeclaim(name: str, **kwargs: Any) -> dict[str, Any]:
    claim = nodeclaim(name, **kwargs)
    claim["spec"]["nodeClassRef"] = {**EC2_REF, "name": "default"}
    return claim


async def cached(informer: Any, name: str, check: Any) -> dict[str, Any]:
    for _ in range(200):
        obj = informer.get(name)
        if check(obj):
            return obj  # type: ignore[no-any-return]
        await asyncio.sleep(0.05)
    raise AssertionError(f"the cache never showed {name} as expected")


async def launch_template(world: World, nodeclass: str) -> str:  # noqa: F811
    tags = {"eks:eks-cluster-name": CLUSTER, "karpenter.k8s.aws/ec2nodeclass": nodeclass}
    name = f"karpenter.k8s.aws/test-{nodeclass}"
    async with world.clients.client("ec2") as ec2:
        await ec2.create_launch_template(
            LaunchTemplateName=name,
            LaunchTemplateData={"ImageId": world.amis["amd64"]},
            TagSpecifications=[
                {
                    "ResourceType": "launch-template",
                    "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                }
            ],
        )
    return name


async def profiles(world: World) -> set[str]:  # noqa: F811
    async with world.clients.client("iam") as iam:
        found = await iam.list_instance_profiles()
    return {p["InstanceProfileName"] for p in found["InstanceProfiles"]}


async def templates(world: World) -> set[str]:  # noqa: F811
    async with world.clients.client("ec2") as ec2:
        found = await ec2.describe_launch_templates()
    return {t["LaunchTemplateName"] for t in found["LaunchTemplates"]}


async def test_deletion_waits_for_nodeclaims_then_removes_what_karpy_made(
    running: tuple[Client, Cache, EC2NodeClassController],
    world: World,  # noqa: F811
) -> None:
    client, cache, controller = running
    await client.create(EC2NODECLASSES, manifest())
    await seen(cache, 1)
    await controller.reconcile("default")
    obj = await client.get(EC2NODECLASSES, "default")
    profile = obj["status"]["instanceProfile"]
    async with world.clients.client("iam") as iam:  # someone else's profile, another path
        await iam.create_instance_profile(InstanceProfileName="theirs", Path="/other/")
    ours = await launch_template(world, "default")
    theirs = await launch_template(world, "other")
    assert {profile, "theirs"} <= await profiles(world)
    await client.create(NODECLAIMS, ec2_nodeclaim("in-use"))
    await cached(controller.nodeclaims, "in-use", lambda c: c is not None)

    await client.delete(EC2NODECLASSES, "default")
    await cached(
        controller.nodeclasses, "default", lambda o: o and o["metadata"].get("deletionTimestamp")
    )
    result = await controller.reconcile("default")
    assert result is not None and result.requeue_after == IN_USE_REQUEUE
    assert profile in await profiles(world)
    assert (await client.get(EC2NODECLASSES, "default"))["metadata"]["finalizers"]

    await client.delete(NODECLAIMS, "in-use")
    await cached(controller.nodeclaims, "in-use", lambda c: c is None)
    assert await controller.reconcile("default") is None
    with pytest.raises(NotFoundError):
        await client.get(EC2NODECLASSES, "default")
    assert await profiles(world) == {"theirs"}
    remaining = await templates(world)
    assert theirs in remaining and ours not in remaining


async def test_another_hash_version_restamps_nodeclaims_as_karpenter_does(
    running: tuple[Client, Cache, EC2NodeClassController],
) -> None:
    client, cache, controller = running
    older = {
        "karpenter.k8s.aws/ec2nodeclass-hash": "1234",
        "karpenter.k8s.aws/ec2nodeclass-hash-version": "v5",
    }
    stamped_before = manifest()
    stamped_before["metadata"]["annotations"] = older
    await client.create(EC2NODECLASSES, stamped_before)
    await client.create(NODECLAIMS, ec2_nodeclaim("plain", annotations=older))
    await client.create(NODECLAIMS, ec2_nodeclaim("drifted", annotations=older))
    await client.patch_status(
        NODECLAIMS,
        "drifted",
        {
            "status": {
                "conditions": [
                    {
                        "type": "Drifted",
                        "status": "True",
                        "reason": "NodeClassDrift",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        },
    )
    kwok = nodeclaim("kwok", annotations=older)  # another NodeClass kind: not touched
    kwok["spec"]["nodeClassRef"]["name"] = "default"
    await client.create(NODECLAIMS, kwok)
    await seen(cache, 1)
    await cached(
        controller.nodeclaims,
        "drifted",
        lambda c: c is not None and (c.get("status") or {}).get("conditions"),
    )
    await cached(controller.nodeclaims, "kwok", lambda c: c is not None)
    await controller.reconcile("default")

    obj = await client.get(EC2NODECLASSES, "default")
    expected = nodeclass_hash(obj, CA_BUNDLE)
    annotations = obj["metadata"]["annotations"]
    assert annotations["karpenter.k8s.aws/ec2nodeclass-hash"] == expected
    assert annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v6"
    plain = (await client.get(NODECLAIMS, "plain"))["metadata"]["annotations"]
    assert plain["karpenter.k8s.aws/ec2nodeclass-hash"] == expected
    assert plain["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v6"
    drifted = (await client.get(NODECLAIMS, "drifted"))["metadata"]["annotations"]
    assert drifted["karpenter.k8s.aws/ec2nodeclass-hash"] == "1234"
    assert drifted["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v6"
    assert (await client.get(NODECLAIMS, "kwok"))["metadata"]["annotations"] == older


async def test_unused_instance_profiles_older_than_an_hour_are_deleted(
    running: tuple[Client, Cache, EC2NodeClassController],
    world: World,  # noqa: F811
) -> None:
    client, _cache, controller = running
    ours = f"/karpenter/{world.clients.region}/{CLUSTER}/"
    async with world.clients.client("iam") as iam:
        for name, path in (
            ("in-status", f"{ours}uid-1/"),
            ("on-a-claim", f"{ours}uid-2/"),
            ("unused", f"{ours}uid-3/"),
            ("other-cluster", f"/karpenter/{world.clients.region}/other/uid-4/"),
        ):
            await iam.create_instance_profile(InstanceProfileName=name, Path=path)
        await iam.add_role_to_instance_profile(InstanceProfileName="unused", RoleName=ROLE)
    await client.create(EC2NODECLASSES, manifest())
    await client.patch_status(
        EC2NODECLASSES, "default", {"status": {"instanceProfile": "in-status"}}
    )
    await client.create(
        NODECLAIMS,
        ec2_nodeclaim(
            "user", annotations={"karpenter.k8s.aws/instance-profile-name": "on-a-claim"}
        ),
    )
    await cached(
        controller.nodeclasses,
        "default",
        lambda o: o is not None and (o.get("status") or {}).get("instanceProfile"),
    )
    await cached(controller.nodeclaims, "user", lambda c: c is not None)
    now = datetime.now(UTC)
    clock = FakeClock(wall_start=now)
    gc = InstanceProfileGC(
        nodeclasses=controller.nodeclasses,
        nodeclaims=controller.nodeclaims,
        cleanup=controller.cleanup,
        clock=clock,
    )
    assert gc.in_use() == {"in-status", "on-a-claim"}
    result = await gc.reconcile(gc.name)
    assert result is not None and result.requeue_after == 30 * 60
    assert {"in-status", "on-a-claim", "unused", "other-cluster"} <= await profiles(world)

    clock.advance(2 * 3600)  # an hour after their creation, unused profiles may go
    await gc.reconcile(gc.name)
    remaining = await profiles(world)
    assert "unused" not in remaining
    assert {"in-status", "on-a-claim", "other-cluster"} <= remaining


DRY_RUNS = ("ec2.CreateLaunchTemplate", "ec2.CreateFleet", "ec2.RunInstances")


def dry_runs(world: World) -> dict[str, int]:  # noqa: F811
    return {call: world.counter.calls[call] for call in DRY_RUNS}


async def test_validation_dry_runs_are_cached_for_thirty_minutes_per_spec(
    running: tuple[Client, Cache, EC2NodeClassController],
    world: World,  # noqa: F811
) -> None:
    """moto honours DryRun on the three calls: `DryRunOperation` means allowed."""
    client, cache, controller = running
    await client.create(EC2NODECLASSES, manifest())
    await seen(cache, 1)
    await controller.reconcile("default")
    found = conditions(await client.get(EC2NODECLASSES, "default"))
    assert found["ValidationSucceeded"]["status"] == "True"
    assert found["Ready"]["status"] == "True"
    assert dry_runs(world) == dict.fromkeys(DRY_RUNS, 1)
    # Nothing was made by the checks.
    assert await templates(world) == set()

    world.clock.now += 29 * 60
    await controller.reconcile("default")
    assert dry_runs(world) == dict.fromkeys(DRY_RUNS, 1)

    world.clock.now += 2 * 60
    await controller.reconcile("default")
    assert dry_runs(world) == dict.fromkeys(DRY_RUNS, 2)

    await client.patch(EC2NODECLASSES, "default", {"spec": {"tags": {"team": "web"}}})
    await seen(cache, 2)
    await controller.reconcile("default")
    assert dry_runs(world) == dict.fromkeys(DRY_RUNS, 3)
    await controller.reconcile("default")
    assert dry_runs(world) == dict.fromkeys(DRY_RUNS, 3)


class _Denied:
    status_code = 403
    headers: dict[str, str] = {}


class Deny:
    """Answers `DryRun=True` requests of one EC2 action with UnauthorizedOperation, as EC2 does
    for a role whose policy lacks it (a `before-call` handler may short-circuit a call); the
    other requests reach moto."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.denied = 0

    def hook(self, service: str, client: Any) -> None:
        if service != "ec2":
            return

        def answer(
            model: Any, params: dict[str, Any], **_: Any
        ) -> tuple[Any, dict[str, Any]] | None:
            if model.name != self.action:
                return None
            if str((params.get("body") or {}).get("DryRun")).lower() != "true":
                return None
            self.denied += 1
            return _Denied(), {
                "Error": {
                    "Code": "UnauthorizedOperation",
                    "Message": "You are not authorized to perform this operation.",
                }
            }

        # On the service's event (as the call counter is), so a counter registered first
        # still sees the call.
        client.meta.events.register("before-call.ec2", answer)


@pytest.mark.parametrize("action", ["CreateLaunchTemplate", "CreateFleet", "RunInstances"])
async def test_a_denied_dry_run_fails_validation_and_no_nodeclaim_launches(
    kubeconfig: str,
    moto_endpoint: str,
    world: World,  # noqa: F811
    action: str,
) -> None:
    deny = Deny(action)

    def hooks(service: str, ec2: Any) -> None:
        world.counter.hook(service, ec2)
        deny.hook(service, ec2)

    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=hooks)
    resolver = NodeClassResolver(
        clients, cluster_name=CLUSTER, kubernetes_version=K8S, clock=world.clock
    )
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    controller = EC2NodeClassController(
        client=client,
        nodeclasses=cache.informer(EC2NODECLASSES),
        nodeclaims=cache.informer(NODECLAIMS),
        resolver=resolver,
        cleanup=NodeClassCleanup(clients, cluster_name=CLUSTER),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(cache.start(stop))
    try:
        await cache.wait_for_sync()
        await client.create(EC2NODECLASSES, manifest())
        await seen(cache, 1)
        result = await controller.reconcile("default")
        assert result is not None and result.requeue_after == NOT_READY_REQUEUE
        obj = await client.get(EC2NODECLASSES, "default")
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()
    assert deny.denied == 1
    found = conditions(obj)
    validation = found["ValidationSucceeded"]
    assert validation["status"] == "False"
    assert validation["reason"] == f"{action}AuthCheckFailed"
    assert f"ec2:{action} is not allowed" in validation["message"]
    assert found["Ready"]["status"] == "False"
    assert "ValidationSucceeded" in found["Ready"]["message"]
    # The checks stop at the first denial.
    order = list(DRY_RUNS)
    assert dry_runs(world) == {
        call: 1 if i <= order.index(f"ec2.{action}") else 0 for i, call in enumerate(order)
    }

    nodeclass = EC2NodeClass.model_validate(obj)

    async def nodeclass_of_name(name: str) -> EC2NodeClass | None:
        return nodeclass if name == "default" else None

    provider = build_aws_provider(
        load_settings({"PROVIDER": "aws", "CLUSTER_NAME": CLUSTER}),
        clients=clients,
        cluster_endpoint="https://prod.example",
        kubernetes_version=K8S,
        nodeclass_of=nodeclass_of_name,
    )
    world.counter.calls.clear()
    with pytest.raises(NodeClassNotReadyError, match="ValidationSucceeded"):
        await provider.create(claim_of())
    assert world.counter.calls["ec2.CreateFleet"] == 0
    assert world.counter.calls["ec2.RunInstances"] == 0


async def test_launch_templates_left_unused_are_deleted_while_the_class_lives(
    running: tuple[Client, Cache, EC2NodeClassController],
    world: World,  # noqa: F811
) -> None:
    """After an AMI change launches use a new template; the old one goes once it has been
    unused for ten minutes and no NodeClaim of the class is still launching."""
    client, _cache, controller = running
    clock = FakeClock(wall_start=datetime.now(UTC))
    launch_templates = LaunchTemplates(world.clients, clock=clock.now)
    tags = {"eks:eks-cluster-name": CLUSTER, "karpenter.k8s.aws/ec2nodeclass": "default"}
    before = {"ImageId": world.amis["amd64"], "UserData": "YmVmb3Jl"}
    after = {"ImageId": world.amis["arm64"], "UserData": "YWZ0ZXI="}
    old = (await launch_templates.ensure(before, tags)).name
    async with world.clients.client("ec2") as ec2:
        await ec2.create_launch_template(
            LaunchTemplateName="karpenter.k8s.aws/other-cluster",
            LaunchTemplateData={"ImageId": world.amis["amd64"]},
            TagSpecifications=[
                {
                    "ResourceType": "launch-template",
                    "Tags": [{"Key": "eks:eks-cluster-name", "Value": "other"}],
                }
            ],
        )
    await client.create(EC2NODECLASSES, manifest())
    gc = LaunchTemplateGC(
        nodeclaims=controller.nodeclaims,
        templates=launch_templates,
        cleanup=controller.cleanup,
        clock=clock,
    )
    result = await gc.reconcile(gc.name)
    assert result is not None and result.requeue_after == LAUNCH_TEMPLATE_GC_PERIOD
    assert old in await templates(world)  # just used

    clock.advance(11 * 60)  # the AMI changed: launches now ask for the new template only
    new = (await launch_templates.ensure(after, tags)).name
    await client.create(NODECLAIMS, ec2_nodeclaim("launching"))
    await cached(controller.nodeclaims, "launching", lambda c: c is not None)
    await gc.reconcile(gc.name)
    # A NodeClaim of the class has no instance yet: its CreateFleet may still name either.
    assert {old, new} <= await templates(world)

    await client.patch_status(
        NODECLAIMS, "launching", {"status": {"providerID": "aws:///us-east-1a/i-0123456789"}}
    )
    await cached(
        controller.nodeclaims,
        "launching",
        lambda c: c is not None and (c.get("status") or {}).get("providerID"),
    )
    await gc.reconcile(gc.name)
    remaining = await templates(world)
    assert old not in remaining
    assert {new, "karpenter.k8s.aws/other-cluster"} <= remaining
    # A launch with the old inputs again makes the template again.
    assert (await launch_templates.ensure(before, tags)).name == old
    assert old in await templates(world)


async def test_nodeclaims_of_an_expiring_capacity_block_are_deleted(
    running: tuple[Client, Cache, EC2NodeClassController],
    world: World,  # noqa: F811
) -> None:
    """A capacity block 30 minutes before its end is expiring (EC2 takes it back 30 minutes
    before the end): its NodeClaims are deleted; an on-demand reservation ending as soon, and
    a NodeClaim in no reservation, are left alone. DescribeCapacityReservations is answered at
    botocore's seam (moto lacks it)."""
    client, cache, controller = running
    now = datetime.now(UTC)
    answer_ec2(
        world.counter,
        reservations=FakeReservations(
            [
                reservation(
                    "cr-0b10c0000000000a1", kind="capacity-block", end=now + timedelta(minutes=30)
                ),
                reservation("cr-0dc000000000000b2", end=now + timedelta(minutes=30)),
            ]
        ),
    )
    labelled = {
        "block": "cr-0b10c0000000000a1",
        "odcr": "cr-0dc000000000000b2",
    }
    for name, rid in labelled.items():
        await client.create(
            NODECLAIMS,
            ec2_nodeclaim(name, labels={"karpenter.k8s.aws/capacity-reservation-id": rid}),
        )
    await client.create(NODECLAIMS, ec2_nodeclaim("plain"))
    for name in ("block", "odcr", "plain"):
        await cached(controller.nodeclaims, name, lambda c: c is not None)
    expiry = ReservationExpiration(
        client=client,
        nodeclaims=controller.nodeclaims,
        reservations=CapacityReservations(world.clients),
        clock=FakeClock(wall_start=now),
    )
    assert expiry.reserved_claims() == {rid: [name] for name, rid in labelled.items()}
    result = await expiry.reconcile(expiry.name)
    assert result is not None and result.requeue_after == 60.0

    def deleting(name: str) -> bool:
        found = cache.informer(NODECLAIMS).get(name)
        return found is None or bool((found.get("metadata") or {}).get("deletionTimestamp"))

    for _ in range(600):  # the watch brings the deletion; generous on a busy machine
        if deleting("block"):
            break
        await asyncio.sleep(0.1)
    assert deleting("block")
    assert not deleting("odcr") and not deleting("plain")


async def test_a_reserved_nodeclaim_whose_instance_left_its_reservation_becomes_on_demand(
    running: tuple[Client, Cache, EC2NodeClassController],
    world: World,  # noqa: F811
) -> None:
    """The reservation ended: EC2 reports the instance as on-demand (moto's instances are never
    in a reservation). The NodeClaim and its registered Node lose `reserved` and the reservation
    label; a NodeClaim whose instance is unknown is left alone."""
    client, cache, controller = running
    async with world.clients.client("ec2") as ec2:
        tags = {
            "eks:eks-cluster-name": CLUSTER,
            "karpenter.sh/nodepool": "pool",
            "karpenter.k8s.aws/ec2nodeclass": "default",
        }
        run = await ec2.run_instances(
            ImageId=world.amis["amd64"],
            InstanceType="m5.large",
            MinCount=1,
            MaxCount=1,
            SubnetId=world.subnets["us-east-1a"],
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                }
            ],
        )
    instance = run["Instances"][0]["InstanceId"]
    provider_id = f"aws:///us-east-1a/{instance}"
    reserved = {
        "karpenter.sh/capacity-type": "reserved",
        "karpenter.k8s.aws/capacity-reservation-id": "cr-0dc000000000000b2",
    }
    for name, pid in (("left", provider_id), ("unknown", "aws:///us-east-1a/i-0000000000000000f")):
        await client.create(NODECLAIMS, ec2_nodeclaim(name, labels=reserved))
        await client.patch_status(NODECLAIMS, name, {"status": {"providerID": pid}})
    await client.create(
        NODES,
        node(
            "node-left",
            provider_id=provider_id,
            labels={**reserved, "karpenter.sh/registered": "true"},
        ),
    )
    nodes = cache.informer(NODES)
    await cache.wait_for_sync()
    for name in ("left", "unknown"):
        await cached(
            controller.nodeclaims,
            name,
            lambda c: c is not None and (c.get("status") or {}).get("providerID"),
        )
    await cached(nodes, "node-left", lambda n: n is not None)
    demote = ReservationCapacityType(
        client=client,
        nodeclaims=controller.nodeclaims,
        nodes=nodes,
        instances=AWSInstances(
            world.clients,
            ClusterInfo(name=CLUSTER, endpoint="https://prod.example"),
            unavailable=UnavailableOfferings(),
        ),
    )
    result = await demote.reconcile(demote.name)
    assert result is not None and result.requeue_after == 60.0
    left = await client.get(NODECLAIMS, "left")
    assert left["metadata"]["labels"]["karpenter.sh/capacity-type"] == "on-demand"
    assert "karpenter.k8s.aws/capacity-reservation-id" not in left["metadata"]["labels"]
    node_left = await client.get(NODES, "node-left")
    assert node_left["metadata"]["labels"]["karpenter.sh/capacity-type"] == "on-demand"
    assert "karpenter.k8s.aws/capacity-reservation-id" not in node_left["metadata"]["labels"]
    unknown = await client.get(NODECLAIMS, "unknown")
    assert unknown["metadata"]["labels"]["karpenter.sh/capacity-type"] == "reserved"
