"""`AWSCloudProvider.is_drifted` against the moto server: a NodeClaim launched from a resolved
EC2NodeClass is not drifted; changing the class's hash, its AMIs, its security groups or its
subnets makes it drifted with Karpenter's reason, in Karpenter's order.

moto's CreateFleet instances carry no security groups, so the security-group case launches the
instance with RunInstances (which applies them) and builds the NodeClaim for it.
"""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.aws.v1.ec2nodeclass import AMIStatus, SecurityGroupStatus, SubnetStatus
from karpy.apis.v1 import NodeClaim
from karpy.apis.v1.nodeclaim import NodeClaimStatus
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.nodeclasshash import hash_annotations
from karpy.cloudprovider.aws.provider import AWSCloudProvider
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    Launcher,
    World,
    catalog,
    claim_of,
    launcher,
    world,
)


def stamped(nodeclass: EC2NodeClass) -> EC2NodeClass:
    """The class as the EC2NodeClass controller leaves it: with its hash annotations."""
    out = nodeclass.model_copy(deep=True)
    out.metadata.annotations = hash_annotations(nodeclass, "Q0E=")
    return out


def provider_for(
    launcher: Launcher,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    nodeclass: EC2NodeClass,
) -> AWSCloudProvider:
    async def nodeclass_of(name: str) -> EC2NodeClass | None:
        return nodeclass if name == nodeclass.name else None

    return AWSCloudProvider(
        nodeclass_of=nodeclass_of, instance_types=catalog, instances=launcher.instances
    )


@pytest.fixture
async def launched(launcher: Launcher) -> NodeClaim:  # noqa: F811
    return await launcher.instances.create(claim_of(), stamped(launcher.nodeclass), launcher.types)


def changed(nodeclass: EC2NodeClass, **status: Any) -> EC2NodeClass:
    out = stamped(nodeclass)
    assert out.status is not None
    out.status = out.status.model_copy(update=status)
    return out


async def test_a_fresh_launch_is_not_drifted(
    launcher: Launcher,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    launched: NodeClaim,
) -> None:
    provider = provider_for(launcher, catalog, stamped(launcher.nodeclass))
    assert await provider.is_drifted(launched) is None


async def test_a_changed_nodeclass_hash_is_nodeclass_drift(
    launcher: Launcher,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    launched: NodeClaim,
) -> None:
    edited = launcher.nodeclass.model_copy(deep=True)
    edited.spec.tags = {"team": "payments"}
    provider = provider_for(launcher, catalog, stamped(edited))
    assert await provider.is_drifted(launched) == "NodeClassDrift"

    # Another hash version says nothing (the claim is re-stamped instead); the AMI still matches.
    older = launched.model_copy(deep=True)
    older.metadata.annotations = {
        **(older.metadata.annotations or {}),
        "karpenter.k8s.aws/ec2nodeclass-hash-version": "v5",
    }
    assert await provider.is_drifted(older) is None


async def test_an_ami_no_longer_selected_is_ami_drift(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    launched: NodeClaim,
) -> None:
    status = launcher.nodeclass.status
    assert status is not None and status.amis
    newer = [
        AMIStatus.model_validate({**ami.to_dict(), "id": "ami-0newer00000000000"})
        if ami.id == world.amis["amd64"]
        else ami
        for ami in status.amis
    ]
    provider = provider_for(launcher, catalog, changed(launcher.nodeclass, amis=newer))
    assert await provider.is_drifted(launched) == "AMIDrift"
    # Only the arm64 AMI changed: the amd64 claim maps to the same AMI as before.
    arm_only = [
        AMIStatus.model_validate({**ami.to_dict(), "id": "ami-0newer00000000000"})
        if ami.id == world.amis["arm64"]
        else ami
        for ami in status.amis
    ]
    provider = provider_for(launcher, catalog, changed(launcher.nodeclass, amis=arm_only))
    assert await provider.is_drifted(launched) is None


async def test_a_subnet_no_longer_selected_is_subnet_drift(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    launched: NodeClaim,
) -> None:
    zone = (launched.metadata.labels or {})["topology.kubernetes.io/zone"]
    status = launcher.nodeclass.status
    assert status is not None and status.subnets
    others = [s for s in status.subnets if s.id != world.subnets[zone]]
    provider = provider_for(launcher, catalog, changed(launcher.nodeclass, subnets=others))
    assert await provider.is_drifted(launched) == "SubnetDrift"


async def test_other_security_groups_are_security_group_drift(
    world: World,  # noqa: F811
    launcher: Launcher,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    zone = "us-east-1a"
    async with world.clients.client("ec2") as ec2:
        reservation = await ec2.run_instances(
            ImageId=world.amis["amd64"],
            MinCount=1,
            MaxCount=1,
            InstanceType="m5.large",
            SubnetId=world.subnets[zone],
            SecurityGroupIds=[world.security_group],
        )
    instance_id = reservation["Instances"][0]["InstanceId"]
    claim = claim_of()
    claim.metadata.labels = {
        **(claim.metadata.labels or {}),
        "node.kubernetes.io/instance-type": "m5.large",
        "kubernetes.io/arch": "amd64",
    }
    claim.status = NodeClaimStatus.model_validate(
        {"providerID": f"aws:///{zone}/{instance_id}", "imageID": world.amis["amd64"]}
    )
    provider = provider_for(launcher, catalog, stamped(launcher.nodeclass))
    assert await provider.is_drifted(claim) is None

    more = [
        SecurityGroupStatus.model_validate({"id": world.security_group, "name": "nodes"}),
        SecurityGroupStatus.model_validate({"id": "sg-0another000000000", "name": "extra"}),
    ]
    provider = provider_for(launcher, catalog, changed(launcher.nodeclass, security_groups=more))
    assert await provider.is_drifted(claim) == "SecurityGroupDrift"

    # Karpenter's order: the security groups are looked at before the subnet.
    moved = [
        SubnetStatus.model_validate(
            {"id": "subnet-0elsewhere0000000", "zone": zone, "zoneID": "use1-az1"}
        )
    ]
    provider = provider_for(
        launcher, catalog, changed(launcher.nodeclass, security_groups=more, subnets=moved)
    )
    assert await provider.is_drifted(claim) == "SecurityGroupDrift"
    provider = provider_for(launcher, catalog, changed(launcher.nodeclass, subnets=moved))
    assert await provider.is_drifted(claim) == "SubnetDrift"


async def test_a_terminated_instance_is_not_drifted(
    launcher: Launcher,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    launched: NodeClaim,
) -> None:
    status = launcher.nodeclass.status
    assert status is not None and status.subnets
    zone = (launched.metadata.labels or {})["topology.kubernetes.io/zone"]
    others = [s for s in status.subnets if s.zone != zone]
    provider = provider_for(launcher, catalog, changed(launcher.nodeclass, subnets=others))
    assert await provider.is_drifted(launched) == "SubnetDrift"
    await launcher.instances.delete(launched)
    assert await provider.is_drifted(launched) is None
