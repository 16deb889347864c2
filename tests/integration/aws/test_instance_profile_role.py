"""Changing an EC2NodeClass's `role` against moto's IAM: the class gets a new instance profile
holding the new role, and the old profile keeps the old role for the nodes launched with it
(the instance profile garbage collection deletes it once no NodeClaim names it). Karpenter
does the same; swapping the role inside the live profile changed running nodes' permissions.
(A role IAM does not have: tests/integration/aws/test_malformed_input.py.)"""

from __future__ import annotations

import json

from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClass
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    ROLE,
    World,
    conditions,
    nodeclass_of,
    world,
)

NEW_ROLE = "KarpenterNodeRole-prod-v2"


async def roles_of(world: World, profile: str) -> list[str]:  # noqa: F811
    async with world.clients.client("iam") as iam:
        found = (await iam.get_instance_profile(InstanceProfileName=profile))["InstanceProfile"]
    return [str(r["RoleName"]) for r in found["Roles"]]


async def resolved(world: World, nodeclass: EC2NodeClass) -> EC2NodeClass:  # noqa: F811
    result = await world.resolver().resolve(nodeclass)
    assert result.ready, conditions(result)
    return result.apply(nodeclass)


async def test_a_new_role_gets_a_new_profile_and_the_old_one_keeps_its_role(
    world: World,  # noqa: F811
) -> None:
    async with world.clients.client("iam") as iam:
        await iam.create_role(
            RoleName=NEW_ROLE,
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )
    first = await resolved(world, nodeclass_of())
    assert first.status is not None and first.status.instance_profile
    old = first.status.instance_profile
    assert await roles_of(world, old) == [ROLE]
    # Resolving again changes nothing.
    again = await resolved(world, first)
    assert again.status is not None and again.status.instance_profile == old

    changed = first.model_copy(deep=True)
    changed.spec.role = NEW_ROLE
    second = await resolved(world, changed)
    assert second.status is not None and second.status.instance_profile
    new = second.status.instance_profile
    assert new != old and new.startswith(f"{CLUSTER}_")
    assert await roles_of(world, new) == [NEW_ROLE]
    assert await roles_of(world, old) == [ROLE]  # the running nodes' profile is untouched
    settled = await resolved(world, second)
    assert settled.status is not None and settled.status.instance_profile == new


async def test_a_profile_from_before_the_role_named_it_is_kept_while_it_holds_the_role(
    world: World,  # noqa: F811
) -> None:
    """A class whose status names a profile of this class holding its role (made under the
    earlier naming) keeps it: no new profile, so no new launch templates on upgrade."""
    nodeclass = await resolved(world, nodeclass_of())
    assert nodeclass.status is not None and nodeclass.status.instance_profile
    path = f"/karpenter/us-east-1/{CLUSTER}/nc-uid-1/"
    async with world.clients.client("iam") as iam:
        await iam.create_instance_profile(InstanceProfileName=f"{CLUSTER}_earlier", Path=path)
        await iam.add_role_to_instance_profile(
            InstanceProfileName=f"{CLUSTER}_earlier", RoleName=ROLE
        )
    nodeclass.status.instance_profile = f"{CLUSTER}_earlier"
    kept = await resolved(world, nodeclass)
    assert kept.status is not None and kept.status.instance_profile == f"{CLUSTER}_earlier"
