"""What a deleted EC2NodeClass leaves in AWS that karpy made for it: the instance profiles it
created for `spec.role` and the launch templates tagged with its name (reference §1.3).

Both deletions tolerate what is already gone, so a finalizer interrupted half-way can simply run
again. moto (and older IAM) ignore `ListInstanceProfiles(PathPrefix=...)`, so profiles are also
filtered by their path here.
"""

from __future__ import annotations

from typing import Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError, error_code

__all__ = ["NodeClassCleanup", "instance_profile_path"]

IAM_NOT_FOUND: Final = "NoSuchEntity"
LT_NOT_FOUND: Final = (
    "InvalidLaunchTemplateName.NotFoundException",
    "InvalidLaunchTemplateId.NotFound",
)
log = structlog.get_logger("karpy.cloudprovider.aws.cleanup")


def instance_profile_path(region: str, cluster: str, uid: str | None) -> str:
    """The IAM path of the profiles karpy creates for one EC2NodeClass (Karpenter's)."""
    return f"/karpenter/{region}/{cluster}/{uid or 'none'}/"


class NodeClassCleanup:
    def __init__(self, clients: AWSClients, *, cluster_name: str) -> None:
        self._clients = clients
        self.cluster_name = cluster_name

    async def delete_instance_profiles(self, uid: str | None) -> list[str]:
        """Delete the profiles under the class's path (roles removed first); their names."""
        path = instance_profile_path(self._clients.region, self.cluster_name, uid)
        deleted: list[str] = []
        async with self._clients.client("iam") as iam:
            paginator = iam.get_paginator("list_instance_profiles")
            profiles = [
                profile
                async for page in paginator.paginate(PathPrefix=path)
                for profile in page.get("InstanceProfiles") or ()
                if profile.get("Path") == path
            ]
            for profile in profiles:
                name = str(profile["InstanceProfileName"])
                try:
                    for role in profile.get("Roles") or ():
                        await iam.remove_role_from_instance_profile(
                            InstanceProfileName=name, RoleName=str(role["RoleName"])
                        )
                    await iam.delete_instance_profile(InstanceProfileName=name)
                except ClientError as error:
                    if error_code(error) != IAM_NOT_FOUND:
                        raise
                deleted.append(name)
        return deleted

    async def delete_launch_templates(self, nodeclass: str) -> list[str]:
        """Delete the launch templates tagged with the cluster and the class; their names."""
        filters = [
            {"Name": f"tag:{aws.TAG_EKS_CLUSTER_NAME}", "Values": [self.cluster_name]},
            {"Name": f"tag:{aws.TAG_NODECLASS}", "Values": [nodeclass]},
        ]
        deleted: list[str] = []
        async with self._clients.client("ec2") as ec2:
            paginator = ec2.get_paginator("describe_launch_templates")
            templates = [
                template
                async for page in paginator.paginate(Filters=filters)
                for template in page.get("LaunchTemplates") or ()
            ]
            for template in templates:
                try:
                    await ec2.delete_launch_template(LaunchTemplateId=template["LaunchTemplateId"])
                except ClientError as error:
                    if error_code(error) not in LT_NOT_FOUND:
                        raise
                deleted.append(str(template["LaunchTemplateName"]))
        return deleted
