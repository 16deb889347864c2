"""Drift reasons from the EC2NodeClass and the instance (no AWS call): the hash comparison only
between equal hash versions, the AMI the class maps the claim's type to, and the instance's
security groups and subnet against the class's status."""

from __future__ import annotations

from typing import Any

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.aws.drift import (
    ami_drift,
    instance_drift,
    placement_group_drift,
    static_drift,
)
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements

HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"


def nodeclass(annotations: dict[str, str] | None = None, **status: Any) -> EC2NodeClass:
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default", "annotations": annotations or {}},
            "spec": {
                "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "r",
            },
            "status": {
                "subnets": [{"id": "subnet-a", "zone": "us-east-1a"}],
                "securityGroups": [{"id": "sg-1"}, {"id": "sg-2"}],
                "amis": [
                    {
                        "id": "ami-arm",
                        "name": "arm",
                        "requirements": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
                        ],
                    },
                    {
                        "id": "ami-amd",
                        "name": "amd",
                        "requirements": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                        ],
                    },
                ],
                **status,
            },
        }
    )


def claim(annotations: dict[str, str] | None = None, image: str | None = "ami-amd") -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": "c",
                "annotations": annotations or {},
                "labels": {"node.kubernetes.io/instance-type": "m5.large"},
            },
            "spec": {
                "requirements": [],
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
            },
            "status": {"imageID": image} if image else {},
        }
    )


M5 = InstanceType(
    name="m5.large",
    capacity={"cpu": 2000},
    offerings=[Offering(zone="us-east-1a", capacity_type="on-demand", price=0.1)],
    requirements=Requirements(
        [Requirement("kubernetes.io/arch", complement=False, values=("amd64",))]
    ),
)


def test_hash_is_compared_only_between_equal_versions() -> None:
    stamped = {HASH: "1", VERSION: "v6"}
    assert static_drift(claim(stamped), nodeclass(stamped)) is None
    assert static_drift(claim(stamped), nodeclass({HASH: "2", VERSION: "v6"})) == "NodeClassDrift"
    assert (
        static_drift(claim({HASH: "1", VERSION: "v5"}), nodeclass({HASH: "2", VERSION: "v6"}))
        is None
    )
    assert static_drift(claim({}), nodeclass({HASH: "2", VERSION: "v6"})) is None
    assert static_drift(claim(stamped), nodeclass({})) is None


def test_ami_is_the_first_one_the_type_meets() -> None:
    assert ami_drift(claim(), nodeclass(), [M5]) is None
    assert ami_drift(claim(image="ami-old"), nodeclass(), [M5]) == "AMIDrift"
    # Nothing to compare: no image, no AMIs resolved, the type is gone.
    assert ami_drift(claim(image=None), nodeclass(), [M5]) is None
    assert ami_drift(claim(image="ami-old"), nodeclass(amis=[]), [M5]) is None
    assert ami_drift(claim(image="ami-old"), nodeclass(), []) is None


def test_security_groups_then_subnet() -> None:
    same = {"SecurityGroups": [{"GroupId": "sg-2"}, {"GroupId": "sg-1"}], "SubnetId": "subnet-a"}
    assert instance_drift(same, nodeclass()) is None
    fewer = {**same, "SecurityGroups": [{"GroupId": "sg-1"}]}
    assert instance_drift(fewer, nodeclass()) == "SecurityGroupDrift"
    moved = {**same, "SubnetId": "subnet-b"}
    assert instance_drift(moved, nodeclass()) == "SubnetDrift"
    assert instance_drift({**moved, "SecurityGroups": [{"GroupId": "sg-9"}]}, nodeclass()) == (
        "SecurityGroupDrift"
    )
    # An instance that reports no security group (moto's on-demand fleet instances) is not compared.
    assert instance_drift({"SubnetId": "subnet-a"}, nodeclass()) is None


def test_an_instance_in_a_reservation_the_class_no_longer_selects_drifts() -> None:
    reserved = {
        "SecurityGroups": [{"GroupId": "sg-2"}, {"GroupId": "sg-1"}],
        "SubnetId": "subnet-a",
        "CapacityReservationId": "cr-1",
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only"
        },
    }
    entry = {
        "id": "cr-1",
        "availabilityZone": "us-east-1a",
        "instanceType": "m5.large",
        "instanceMatchCriteria": "targeted",
        "ownerID": "123456789012",
    }
    assert instance_drift(reserved, nodeclass(capacityReservations=[entry])) is None
    assert instance_drift(reserved, nodeclass()) == "CapacityReservationDrift"
    # An instance that only matched an open reservation was not launched into it: no drift.
    opened = {
        **reserved,
        "CapacityReservationSpecification": {"CapacityReservationPreference": "open"},
    }
    assert instance_drift(opened, nodeclass()) is None


def test_the_placement_group_label_must_be_the_group_the_class_resolves_to() -> None:
    def labelled(group: str | None) -> NodeClaim:
        out = claim()
        if group is not None:
            out.metadata.labels = {
                **(out.metadata.labels or {}),
                "karpenter.k8s.aws/placement-group-id": group,
            }
        return out

    assert placement_group_drift(labelled(None), None) is None
    assert placement_group_drift(labelled("pg-1"), "pg-1") is None
    assert placement_group_drift(labelled(None), "pg-1") == "PlacementGroupDrift"  # added
    assert placement_group_drift(labelled("pg-1"), None) == "PlacementGroupDrift"  # removed
    assert placement_group_drift(labelled("pg-1"), "pg-2") == "PlacementGroupDrift"  # changed
