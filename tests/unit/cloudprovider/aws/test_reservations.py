"""Capacity reservations without I/O: the status entry of an EC2 reservation (kind, state, what
karpy refuses), when to look again, the queries of selector terms, and what a reserved launch
asks of CreateFleet and of its launch template."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.aws.v1.ec2nodeclass import (
    CapacityReservationSelectorTerm,
    CapacityReservationStatus,
)
from karpy.cloudprovider.aws.fleet import capacity_type_for, fleet_request
from karpy.cloudprovider.aws.launch import launch_template_data
from karpy.cloudprovider.aws.reservations import (
    requeue_after,
    reservation_queries,
    reservation_status,
)
from karpy.cloudprovider.aws.userdata import BootstrapOptions
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirements

NOW = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)


def raw(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "CapacityReservationId": "cr-1",
        "AvailabilityZone": "us-east-1a",
        "InstanceType": "m5.large",
        "InstanceMatchCriteria": "targeted",
        "OwnerId": "123456789012",
    }
    return {**base, **over}


def test_a_reservation_without_type_is_an_on_demand_reservation() -> None:
    status = reservation_status(raw(), NOW)
    assert status is not None
    assert (status.reservation_type, status.state, status.interruptible) == (
        "default",
        "active",
        False,
    )


@pytest.mark.parametrize(
    ("minutes_left", "state"), [(41, "active"), (40, "expiring"), (5, "expiring")]
)
def test_a_capacity_block_expires_40_minutes_before_its_end(minutes_left: int, state: str) -> None:
    end = NOW + timedelta(minutes=minutes_left)
    status = reservation_status(raw(ReservationType="capacity-block", EndDate=end), NOW)
    assert status is not None and status.state == state


def test_an_on_demand_reservation_never_turns_expiring() -> None:
    status = reservation_status(raw(EndDate=NOW + timedelta(minutes=5)), NOW)
    assert status is not None and status.state == "active"


@pytest.mark.parametrize("over", [{"InstanceMatchCriteria": "future"}, {"ReservationType": "x"}])
def test_kinds_karpy_does_not_know_are_left_out(over: dict[str, Any]) -> None:
    assert reservation_status(raw(**over), NOW) is None


def status_of(end: datetime | None, kind: str = "default") -> CapacityReservationStatus:
    status = reservation_status(raw(EndDate=end, ReservationType=kind), NOW - timedelta(hours=2))
    assert status is not None
    return status


def test_looked_at_every_minute_or_when_one_ends_sooner() -> None:
    assert requeue_after([], NOW) == 60.0
    assert requeue_after([status_of(NOW + timedelta(hours=3))], NOW) == 60.0
    assert requeue_after([status_of(NOW + timedelta(seconds=20))], NOW) == 20.0
    block = status_of(NOW + timedelta(minutes=40, seconds=30), "capacity-block")
    assert requeue_after([block], NOW) == 30.0  # when it turns expiring


def test_terms_become_queries() -> None:
    active = {"Name": "state", "Values": ["active"]}
    terms = [
        CapacityReservationSelectorTerm.model_validate({"id": "cr-1"}),
        CapacityReservationSelectorTerm.model_validate(
            {"tags": {"team": "ml", "any": "*"}, "ownerID": "123456789012"}
        ),
        CapacityReservationSelectorTerm.model_validate({"instanceMatchCriteria": "open"}),
    ]
    assert reservation_queries(terms) == [
        {"CapacityReservationIds": ["cr-1"], "Filters": [active]},
        {
            "Filters": [
                active,
                {"Name": "owner-id", "Values": ["123456789012"]},
                {"Name": "tag-key", "Values": ["any"]},
                {"Name": "tag:team", "Values": ["ml"]},
            ]
        },
        {"Filters": [active, {"Name": "instance-match-criteria", "Values": ["open"]}]},
    ]


@pytest.mark.parametrize(
    ("kind", "interruptible", "target", "options"),
    [
        (
            "default",
            False,
            "on-demand",
            {"OnDemandOptions": {"AllocationStrategy": "lowest-price"}},
        ),
        ("capacity-block", False, "capacity-block", {}),
        (
            "default",
            True,
            "reserved-capacity",
            {
                "ReservedCapacityOptions": {
                    "ReservationTypes": ["interruptible-capacity-reservation"]
                }
            },
        ),
    ],
)
def test_a_reserved_fleet_asks_for_the_reservation_kind(
    kind: str, interruptible: bool, target: str, options: dict[str, Any]
) -> None:
    request = fleet_request(
        [], "reserved", {}, token="t", reservation_type=kind, interruptible=interruptible
    )
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == target
    extra = {
        k: v
        for k, v in request.items()
        if k in ("OnDemandOptions", "SpotOptions", "ReservedCapacityOptions")
    }
    assert extra == options


def test_reserved_comes_before_spot_and_on_demand() -> None:
    reserved = Offering(zone="z", capacity_type="reserved", price=1e-7)
    spot = Offering(zone="z", capacity_type="spot", price=0.03)
    it = InstanceType(name="m5.large", capacity={}, offerings=[reserved, spot])
    assert capacity_type_for(Requirements(), [it]) == "reserved"
    reserved.available = False
    assert capacity_type_for(Requirements(), [it]) == "spot"


def nodeclass() -> EC2NodeClass:
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "subnetSelectorTerms": [{"id": "subnet-1"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "r",
            },
            "status": {"securityGroups": [{"id": "sg-1"}], "instanceProfile": "p"},
        }
    )


OPTIONS = BootstrapOptions(
    cluster_name="c", cluster_endpoint="https://e", cluster_cidr="10.0.0.0/16"
)


def test_templates_target_their_reservation_or_none() -> None:
    def data(**kw: Any) -> dict[str, Any]:
        return launch_template_data(nodeclass(), image_id="ami-1", bootstrap=OPTIONS, tags={}, **kw)

    assert "CapacityReservationSpecification" not in data()  # the gate is off
    assert data(reserved_capacity=True)["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "none"
    }
    block = reservation_status(
        raw(ReservationType="capacity-block", EndDate=NOW + timedelta(days=1)), NOW
    )
    targeted = data(reserved_capacity=True, capacity_reservation=block)
    assert targeted["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-1"},
    }
    assert targeted["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data(placement_group_id="pg-1")["Placement"] == {"GroupId": "pg-1"}
