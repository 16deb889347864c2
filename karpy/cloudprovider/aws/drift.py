"""Why an EC2 NodeClaim no longer matches its EC2NodeClass (Karpenter's `drift.go`, §3.6).

Checked in Karpenter's order, the first reason wins:

1. `NodeClassDrift`: the class's hash differs from the one stamped on the NodeClaim at launch,
   both of the same hash version (another version says nothing: it is re-stamped instead);
2. `AMIDrift`: the NodeClaim's image is not the AMI the class now maps its instance type to
   (the first AMI in `status.amis` whose requirements the type meets);
3. `SecurityGroupDrift`: the instance's security groups are not the class's `status.securityGroups`;
4. `SubnetDrift`: the instance's subnet is not among the class's `status.subnets`;
5. `CapacityReservationDrift`: the instance runs in a capacity reservation (launched into it
   only) that is no longer among the class's `status.capacityReservations`. It is read from the
   instance, not from the offerings, so a reserved node that fell back to on-demand is not
   drifted twice (Karpenter's reasoning);
6. `PlacementGroupDrift`: the NodeClaim's `karpenter.k8s.aws/placement-group-id` label is not
   the group the class's `placementGroupSelector` resolves to now (a selector added, removed or
   pointed at another group).

Where Karpenter returns an error because the class has no AMIs, subnets or security groups
resolved, or the NodeClaim has no image, karpy reports no drift: it cannot tell yet. An instance
reporting no security group at all (moto's on-demand fleet instances; never a real EC2
instance) is not compared either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClass
from karpy.apis.v1 import NodeClaim
from karpy.apis.v1.labels import LABEL_INSTANCE_TYPE
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirements

__all__ = [
    "AMI_DRIFT",
    "CAPACITY_RESERVATION_DRIFT",
    "NODECLASS_DRIFT",
    "PLACEMENT_GROUP_DRIFT",
    "SECURITY_GROUP_DRIFT",
    "SUBNET_DRIFT",
    "ami_drift",
    "instance_drift",
    "placement_group_drift",
    "static_drift",
]

NODECLASS_DRIFT: Final = "NodeClassDrift"
AMI_DRIFT: Final = "AMIDrift"
SECURITY_GROUP_DRIFT: Final = "SecurityGroupDrift"
SUBNET_DRIFT: Final = "SubnetDrift"
CAPACITY_RESERVATION_DRIFT: Final = "CapacityReservationDrift"
PLACEMENT_GROUP_DRIFT: Final = "PlacementGroupDrift"


def placement_group_drift(claim: NodeClaim, group_id: str | None) -> str | None:
    """`PlacementGroupDrift` when the claim's placement-group label is not `group_id` (the
    group the class resolves to now, None without a selector)."""
    labelled = (claim.metadata.labels or {}).get(aws.LABEL_PLACEMENT_GROUP_ID)
    return PLACEMENT_GROUP_DRIFT if labelled != group_id else None


def static_drift(claim: NodeClaim, nodeclass: EC2NodeClass) -> str | None:
    """`NodeClassDrift` when both carry a hash of the same version and the hashes differ."""
    ours = nodeclass.metadata.annotations or {}
    theirs = claim.metadata.annotations or {}
    keys = (aws.ANNOTATION_EC2NODECLASS_HASH, aws.ANNOTATION_EC2NODECLASS_HASH_VERSION)
    if any(k not in ours or k not in theirs for k in keys):
        return None
    if (
        ours[aws.ANNOTATION_EC2NODECLASS_HASH_VERSION]
        != theirs[aws.ANNOTATION_EC2NODECLASS_HASH_VERSION]
    ):
        return None
    if ours[aws.ANNOTATION_EC2NODECLASS_HASH] != theirs[aws.ANNOTATION_EC2NODECLASS_HASH]:
        return NODECLASS_DRIFT
    return None


def ami_drift(
    claim: NodeClaim, nodeclass: EC2NodeClass, instance_types: Sequence[InstanceType]
) -> str | None:
    """`AMIDrift` when the class maps the claim's instance type to another AMI than its image."""
    image = claim.status.image_id if claim.status else None
    amis = (nodeclass.status.amis if nodeclass.status else None) or []
    name = (claim.metadata.labels or {}).get(LABEL_INSTANCE_TYPE)
    it = next((t for t in instance_types if t.name == name), None)
    if not image or not amis or it is None:
        return None
    for ami in amis:
        reqs = Requirements.from_node_selector_terms(r.to_dict() for r in ami.requirements)
        if it.requirements.intersects(reqs) is None:
            return None if ami.id == image else AMI_DRIFT
    return AMI_DRIFT


def instance_drift(instance: Mapping[str, Any], nodeclass: EC2NodeClass) -> str | None:
    """`SecurityGroupDrift`, else `SubnetDrift`, else `CapacityReservationDrift`, of a
    `DescribeInstances` instance."""
    status = nodeclass.status
    wanted_groups = {sg.id for sg in (status.security_groups if status else None) or []}
    groups = {str(g.get("GroupId")) for g in instance.get("SecurityGroups") or ()}
    if wanted_groups and groups and groups != wanted_groups:
        return SECURITY_GROUP_DRIFT
    subnets = {s.id for s in (status.subnets if status else None) or []}
    subnet = instance.get("SubnetId")
    if subnets and subnet and subnet not in subnets:
        return SUBNET_DRIFT
    reservation = instance.get("CapacityReservationId")
    only = (instance.get("CapacityReservationSpecification") or {}).get(
        "CapacityReservationPreference"
    ) == "capacity-reservations-only"
    if reservation and only:
        known = {r.id for r in (status.capacity_reservations if status else None) or []}
        if reservation not in known:
            return CAPACITY_RESERVATION_DRIFT
    return None
