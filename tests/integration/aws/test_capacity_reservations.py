"""Capacity reservations (`capacityReservationSelectorTerms`, the `ReservedCapacity` gate)
against the moto server, with DescribeCapacityReservations answered at botocore's seam (moto
does not implement it; `ec2answers.py`): the reservations in the EC2NodeClass status and its
`CapacityReservationsReady` condition, `reserved` offerings priced as Karpenter prices them,
and launches into the reservation with a launch template that targets it, until it is full."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.v1 import NodeClaim
from karpy.apis.v1.nodeclaim import NodeClaimStatus
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import RESERVED_PRICE_DIVISOR, InstanceTypeProvider
from karpy.cloudprovider.aws.launch import LaunchTemplates
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.cloudprovider.types import InsufficientCapacityError
from karpy.scheduling.instancetypes import InstanceType
from tests.integration.aws.ec2answers import FakeReservations, answer_ec2, reservation
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    K8S,
    World,
    catalog,
    conditions,
    nodeclass_of,
    world,
)

NEAR = "cr-0aaaaaaaaaaaa0001"  # m5.large in us-east-1a, where the class has a subnet
FAR = "cr-0aaaaaaaaaaaa0002"  # m5.large in us-east-1d, where it has none
WEB = "cr-0aaaaaaaaaaaa0003"  # another team's
ENDED = "cr-0aaaaaaaaaaaa0004"
BLOCK = "cr-0aaaaaaaaaaaa0005"  # a capacity block 30 minutes before its end
TERMS = [{"tags": {"team": "ml"}}, {"id": BLOCK}]


def account(now: datetime) -> FakeReservations:
    return FakeReservations(
        [
            reservation(NEAR, zone="us-east-1a", tags={"team": "ml"}),
            reservation(FAR, zone="us-east-1d", tags={"team": "ml"}),
            reservation(WEB, zone="us-east-1a", tags={"team": "web"}),
            reservation(ENDED, zone="us-east-1a", tags={"team": "ml"}, end=now - timedelta(1)),
            reservation(
                BLOCK,
                instance_type="p5.48xlarge",
                zone="us-east-1b",
                kind="capacity-block",
                end=now + timedelta(minutes=30),
            ),
        ]
    )


def resolver_of(world: World, *, gate: bool = True) -> NodeClassResolver:  # noqa: F811
    return NodeClassResolver(
        world.clients,
        cluster_name=CLUSTER,
        kubernetes_version=K8S,
        clock=world.clock,
        reserved_capacity=gate,
    )


async def test_selected_reservations_fill_the_status(world: World) -> None:  # noqa: F811
    fake, _ = answer_ec2(world.counter, reservations=account(datetime.now(UTC)))
    result = await resolver_of(world).resolve(nodeclass_of(capacityReservationSelectorTerms=TERMS))
    assert result.ready, conditions(result)
    assert [r.id for r in result.capacity_reservations or []] == [NEAR, FAR, BLOCK]
    by_id = {r.id: r for r in result.capacity_reservations or []}
    near = by_id[NEAR]
    assert (near.availability_zone, near.instance_type, near.instance_match_criteria) == (
        "us-east-1a",
        "m5.large",
        "targeted",
    )
    assert (near.reservation_type, near.state, near.owner_id) == (
        "default",
        "active",
        near.owner_id,
    )
    assert (by_id[BLOCK].reservation_type, by_id[BLOCK].state) == ("capacity-block", "expiring")
    status, reason, message = conditions(result)["CapacityReservationsReady"]
    assert (status, reason) == ("True", "CapacityReservationsReady")
    # The one karpy cannot launch into is named, with the zone and the fix.
    assert FAR in message and "us-east-1d" in message and NEAR not in message
    assert "add a subnet in us-east-1d to subnetSelectorTerms" in message
    # An id is asked for by id (EC2 refuses MaxResults with ids), tags by filter; both active.
    by_ids = [q for q in fake.asked if "CapacityReservationIds" in q]
    assert by_ids == [
        {"CapacityReservationIds": [BLOCK], "Filters": [{"Name": "state", "Values": ["active"]}]}
    ]
    assert {"Name": "tag:team", "Values": ["ml"]} in next(
        q for q in fake.asked if "CapacityReservationIds" not in q
    )["Filters"]
    assert result.requeue_after == 60.0


async def test_reservations_are_asked_once_a_minute(world: World) -> None:  # noqa: F811
    answer_ec2(world.counter, reservations=account(datetime.now(UTC)))
    resolver = resolver_of(world)
    nc = nodeclass_of(capacityReservationSelectorTerms=TERMS)
    await resolver.resolve(nc)
    await resolver.resolve(nc)
    assert world.counter.calls["ec2.DescribeCapacityReservations"] == 2  # one per term
    world.clock.now += 61
    await resolver.resolve(nc)
    assert world.counter.calls["ec2.DescribeCapacityReservations"] == 4


async def test_gate_off_asks_nothing_and_sets_no_condition(world: World) -> None:  # noqa: F811
    answer_ec2(world.counter, reservations=account(datetime.now(UTC)))
    result = await resolver_of(world, gate=False).resolve(
        nodeclass_of(capacityReservationSelectorTerms=TERMS)
    )
    assert result.ready and "CapacityReservationsReady" not in conditions(result)
    assert not result.capacity_reservations
    assert world.counter.calls["ec2.DescribeCapacityReservations"] == 0


def reserved_claim(name: str, uid: str, capacity_types: list[str], **extra: list[str]) -> NodeClaim:
    requirements: list[dict[str, Any]] = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity_types},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
    ]
    for key, values in extra.items():
        requirements.append({"key": key, "operator": "In", "values": values})
    return NodeClaim.model_validate(
        {
            "metadata": {"name": name, "uid": uid, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {
                "requirements": requirements,
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
            },
        }
    )


async def reserved_world(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    *,
    available: int = 2,
) -> tuple[EC2NodeClass, list[InstanceType], AWSInstances]:
    now = datetime.now(UTC)
    fake = account(now)
    for item in fake.items:
        item["AvailableInstanceCount"] = available
    answer_ec2(world.counter, reservations=fake)
    resolver = resolver_of(world)
    spec = nodeclass_of(capacityReservationSelectorTerms=TERMS)
    nodeclass = (await resolver.resolve(spec)).apply(spec)
    catalog.unavailable = UnavailableOfferings(clock=world.clock)
    catalog.reservations = resolver.reservations
    types = await catalog.for_nodeclass(nodeclass)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
        reservations=resolver.reservations,
        reserved_capacity=True,
    )
    world.counter.calls.clear()
    return nodeclass, types, instances


async def template_data(world: World, name: str) -> dict[str, Any]:  # noqa: F811
    async with world.clients.client("ec2") as ec2:
        versions = await ec2.describe_launch_template_versions(LaunchTemplateName=name)
    data: dict[str, Any] = versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    return data


async def test_reserved_offerings_are_priced_as_karpenter_prices_them(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    nodeclass, types, _ = await reserved_world(world, catalog)
    m5 = next(it for it in types if it.name == "m5.large")
    reserved = {
        o.requirements.labels()["karpenter.k8s.aws/capacity-reservation-id"]: o
        for o in m5.offerings
        if o.capacity_type == "reserved"
    }
    assert set(reserved) == {NEAR, FAR}
    on_demand = catalog.pricing.on_demand_price("m5.large")
    assert on_demand is not None
    assert reserved[NEAR].price == pytest.approx(on_demand / RESERVED_PRICE_DIVISOR)
    assert (reserved[NEAR].zone, reserved[NEAR].available) == ("us-east-1a", True)
    assert reserved[NEAR].requirements.labels()["topology.k8s.aws/zone-id"].startswith("use1-az")
    # No subnet of the class in us-east-1d: that reservation is offered, never available.
    assert (reserved[FAR].zone, reserved[FAR].available) == ("us-east-1d", False)
    assert "reserved" in m5.requirements.get("karpenter.sh/capacity-type").values  # type: ignore[union-attr]
    # The same inputs give the same list, so concurrent launches share their candidates.
    assert await catalog.for_nodeclass(nodeclass) is types


async def test_launches_into_the_reservation_until_it_is_full(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    nodeclass, types, instances = await reserved_world(world, catalog, available=1)
    first = await instances.create(
        reserved_claim("ml-1", "uid-1", ["reserved", "on-demand"]), nodeclass, types
    )
    labels = first.metadata.labels or {}
    assert labels["karpenter.sh/capacity-type"] == "reserved"
    assert labels["karpenter.k8s.aws/capacity-reservation-id"] == NEAR
    assert labels["karpenter.k8s.aws/capacity-reservation-type"] == "default"
    assert labels["topology.kubernetes.io/zone"] == "us-east-1a"
    assert world.counter.calls["ec2.CreateFleet"] == 1
    assert instances.reservations is not None and instances.reservations.available(NEAR) == 0

    async with world.clients.client("ec2") as ec2:
        names = [
            t["LaunchTemplateName"]
            for t in (await ec2.describe_launch_templates())["LaunchTemplates"]
        ]
    (targeted,) = names
    data = await template_data(world, targeted)
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": NEAR},
    }

    # Full now: the next NodeClaim that allows on-demand too launches on-demand, with a
    # template that keeps it out of open reservations.
    types = await catalog.for_nodeclass(nodeclass)
    second = await instances.create(
        reserved_claim("ml-2", "uid-2", ["reserved", "on-demand"]), nodeclass, types
    )
    assert (second.metadata.labels or {})["karpenter.sh/capacity-type"] == "on-demand"
    assert "karpenter.k8s.aws/capacity-reservation-id" not in (second.metadata.labels or {})
    async with world.clients.client("ec2") as ec2:
        names = [
            t["LaunchTemplateName"]
            for t in (await ec2.describe_launch_templates())["LaunchTemplates"]
        ]
    (other,) = set(names) - {targeted}
    assert (await template_data(world, other))["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "none"
    }


async def test_a_full_reservation_is_not_asked_again(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    """EC2 says the reservation is full (`ReservationCapacityExceeded`, injected at the
    CreateFleet seam): the launch fails as insufficient capacity, the reservation counts no
    room, and the next launch goes on-demand without asking it again."""
    nodeclass, types, instances = await reserved_world(world, catalog, available=5)
    sent: list[dict[str, Any]] = []

    def full(params: dict[str, Any]) -> dict[str, Any]:
        sent.append(params)
        (config,) = params["LaunchTemplateConfigs"]
        return {
            "Errors": [
                {
                    "LaunchTemplateAndOverrides": {
                        "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
                        "Overrides": config["Overrides"][0],
                    },
                    "Lifecycle": "on-demand",
                    "ErrorCode": "ReservationCapacityExceeded",
                    "ErrorMessage": "There is not enough capacity in the reservation.",
                }
            ],
            "Instances": [],
        }

    world.counter.answers["ec2.CreateFleet"] = full
    with pytest.raises(InsufficientCapacityError, match="ReservationCapacityExceeded"):
        await instances.create(reserved_claim("ml-1", "uid-1", ["reserved"]), nodeclass, types)
    (request,) = sent
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert [o["AvailabilityZone"] for o in request["LaunchTemplateConfigs"][0]["Overrides"]] == [
        "us-east-1a"
    ]
    assert instances.reservations is not None and instances.reservations.available(NEAR) == 0

    del world.counter.answers["ec2.CreateFleet"]
    types = await catalog.for_nodeclass(nodeclass)
    second = await instances.create(
        reserved_claim("ml-2", "uid-2", ["reserved", "on-demand"]), nodeclass, types
    )
    assert (second.metadata.labels or {})["karpenter.sh/capacity-type"] == "on-demand"
    assert len(sent) == 1


async def test_terminating_a_reserved_instance_frees_its_slot(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    """moto's instances are never in a reservation, so DescribeInstances and TerminateInstances
    are answered at the seam for an instance EC2 launched into NEAR."""
    _, _, instances = await reserved_world(world, catalog, available=1)
    instance_id = "i-0123456789abcdef0"
    described = {
        "InstanceId": instance_id,
        "InstanceType": "m5.large",
        "State": {"Code": 16, "Name": "running"},
        "Placement": {"AvailabilityZone": "us-east-1a"},
        "CapacityReservationId": NEAR,
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": NEAR},
        },
    }
    world.counter.answers["ec2.DescribeInstances"] = lambda _: {
        "Reservations": [{"ReservationId": "r-1", "Instances": [described]}]
    }
    world.counter.answers["ec2.TerminateInstances"] = lambda _: {
        "TerminatingInstances": [
            {
                "InstanceId": instance_id,
                "CurrentState": {"Code": 32, "Name": "shutting-down"},
                "PreviousState": {"Code": 16, "Name": "running"},
            }
        ]
    }
    claim = reserved_claim("ml-1", "uid-1", ["reserved"])
    claim.status = claim.status or NodeClaimStatus()
    claim.status.provider_id = f"aws:///us-east-1a/{instance_id}"
    assert instances.reservations is not None
    assert (await instances.get(claim.status.provider_id)).metadata.labels == {
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-east-1a",
        "karpenter.sh/capacity-type": "reserved",
    }
    instances.reservations.mark_launched(NEAR)
    assert instances.reservations.available(NEAR) == 0
    await instances.delete(claim)
    assert world.counter.calls["ec2.TerminateInstances"] == 1
    assert instances.reservations.available(NEAR) == 1
