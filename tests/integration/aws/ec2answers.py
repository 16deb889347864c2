"""Answers for the EC2 calls moto does not implement, given at botocore's seam
(`CallCounter.answers`): `DescribeCapacityReservations` and `DescribePlacementGroups`. The
objects are shaped as the EC2 API reference's `CapacityReservation` and `PlacementGroup`
(checked against botocore's output shapes on each answer), and the filters and errors are the
ones the reference documents for the parameters karpy sends."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID

from tests.integration.aws.conftest import REGION, AnsweredError, CallCounter


def reservation(
    rid: str,
    *,
    instance_type: str = "m5.large",
    zone: str = "us-east-1a",
    available: int = 2,
    total: int = 2,
    criteria: str = "targeted",
    kind: str | None = None,
    end: datetime | None = None,
    tags: dict[str, str] | None = None,
    state: str = "active",
    owner: str = DEFAULT_ACCOUNT_ID,
) -> dict[str, Any]:
    """One `CapacityReservation` as DescribeCapacityReservations returns it."""
    out: dict[str, Any] = {
        "CapacityReservationId": rid,
        "OwnerId": owner,
        "CapacityReservationArn": f"arn:aws:ec2:{REGION}:{owner}:capacity-reservation/{rid}",
        "AvailabilityZoneId": "use1-az" + zone[-1],
        "InstanceType": instance_type,
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": zone,
        "Tenancy": "default",
        "TotalInstanceCount": total,
        "AvailableInstanceCount": available,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": state,
        "StartDate": datetime(2026, 1, 1, tzinfo=UTC),
        "EndDateType": "limited" if end else "unlimited",
        "InstanceMatchCriteria": criteria,
        "CreateDate": datetime(2026, 1, 1, tzinfo=UTC),
        "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()],
    }
    if end is not None:
        out["EndDate"] = end
    if kind is not None:
        out["ReservationType"] = kind
    return out


def _filtered(item: dict[str, Any], filters: list[dict[str, Any]], fields: dict[str, str]) -> bool:
    tags = {t["Key"]: t["Value"] for t in item.get("Tags") or ()}
    for f in filters:
        name, values = f["Name"], f["Values"]
        if name in fields:
            if str(item.get(fields[name])) not in values:
                return False
        elif name == "tag-key":
            if not any(v in tags for v in values):
                return False
        elif name.startswith("tag:"):
            if tags.get(name[4:]) not in values:
                return False
        else:
            raise AnsweredError("InvalidParameterValue", f"The filter '{name}' is invalid")
    return True


@dataclass
class FakeReservations:
    """The account's capacity reservations, answering DescribeCapacityReservations."""

    items: list[dict[str, Any]] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)
    failure: AnsweredError | None = None

    def describe(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params)
        if self.failure is not None:
            raise self.failure
        ids = params.get("CapacityReservationIds")
        if ids and params.get("MaxResults"):
            raise AnsweredError(
                "InvalidParameterCombination",
                "The parameter CapacityReservationIds cannot be used with MaxResults",
            )
        found = list(self.items)
        if ids:
            known = {r["CapacityReservationId"] for r in found}
            for rid in ids:
                if rid not in known:
                    raise AnsweredError(
                        "InvalidCapacityReservationId.NotFound",
                        f"The capacity reservation ID '{rid}' does not exist",
                    )
            found = [r for r in found if r["CapacityReservationId"] in ids]
        fields = {
            "state": "State",
            "owner-id": "OwnerId",
            "instance-match-criteria": "InstanceMatchCriteria",
            "availability-zone": "AvailabilityZone",
            "instance-type": "InstanceType",
        }
        found = [r for r in found if _filtered(r, params.get("Filters") or [], fields)]
        return {"CapacityReservations": found}


def placement_group(
    name: str, gid: str, *, strategy: str = "cluster", state: str = "available", partitions: int = 0
) -> dict[str, Any]:
    """One `PlacementGroup` as DescribePlacementGroups returns it."""
    out: dict[str, Any] = {
        "GroupName": name,
        "State": state,
        "Strategy": strategy,
        "GroupId": gid,
        "Tags": [],
        "GroupArn": f"arn:aws:ec2:{REGION}:{DEFAULT_ACCOUNT_ID}:placement-group/{name}",
    }
    if partitions:
        out["PartitionCount"] = partitions
    return out


@dataclass
class FakePlacementGroups:
    """The account's placement groups, answering DescribePlacementGroups (an unknown name or
    id is an error, as EC2 answers it)."""

    items: list[dict[str, Any]] = field(default_factory=list)

    def describe(self, params: dict[str, Any]) -> dict[str, Any]:
        found = list(self.items)
        for name in params.get("GroupNames") or ():
            if not any(g["GroupName"] == name for g in found):
                raise AnsweredError(
                    "InvalidPlacementGroup.Unknown", f"The Placement Group '{name}' is unknown."
                )
        for gid in params.get("GroupIds") or ():
            if not any(g["GroupId"] == gid for g in found):
                raise AnsweredError(
                    "InvalidPlacementGroupId.NotFound",
                    f"The Placement Group ID '{gid}' does not exist.",
                )
        if params.get("GroupNames"):
            found = [g for g in found if g["GroupName"] in params["GroupNames"]]
        if params.get("GroupIds"):
            found = [g for g in found if g["GroupId"] in params["GroupIds"]]
        fields = {"state": "State", "strategy": "Strategy", "group-name": "GroupName"}
        found = [g for g in found if _filtered(g, params.get("Filters") or [], fields)]
        return {"PlacementGroups": found}


def answer_ec2(
    counter: CallCounter,
    *,
    reservations: FakeReservations | None = None,
    groups: FakePlacementGroups | None = None,
) -> tuple[FakeReservations, FakePlacementGroups]:
    """Answer the two calls from these fakes (new empty ones by default)."""
    reservations = reservations or FakeReservations()
    groups = groups or FakePlacementGroups()
    counter.answers["ec2.DescribeCapacityReservations"] = reservations.describe
    counter.answers["ec2.DescribePlacementGroups"] = groups.describe
    return reservations, groups


def in_hours(hours: float) -> datetime:
    return datetime.now(UTC) + timedelta(hours=hours)
