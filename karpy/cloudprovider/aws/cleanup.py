"""What karpy made in AWS for EC2NodeClasses and no longer needs: the instance profiles and
launch templates of a deleted class (reference §1.3), and profiles no class or NodeClaim uses
any more (§1.6 garbage collection, e.g. after `spec.role` changed or a class was deleted while
karpy was not running).

Both deletions tolerate what is already gone, so a finalizer interrupted half-way can simply run
again. moto (and older IAM) ignore `ListInstanceProfiles(PathPrefix=...)`, so profiles are also
filtered by their path here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError, error_code

__all__ = ["NodeClassCleanup", "cluster_profiles_path", "instance_profile_path"]

IAM_NOT_FOUND: Final = "NoSuchEntity"
LT_NOT_FOUND: Final = (
    "InvalidLaunchTemplateName.NotFoundException",
    "InvalidLaunchTemplateId.NotFound",
)
log = structlog.get_logger("karpy.cloudprovider.aws.cleanup")


def cluster_profiles_path(region: str, cluster: str) -> str:
    """The IAM path under which every profile karpy creates for this cluster lives."""
    return f"/karpenter/{region}/{cluster}/"


def instance_profile_path(region: str, cluster: str, uid: str | None) -> str:
    """The IAM path of the profiles karpy creates for one EC2NodeClass (Karpenter's)."""
    return f"{cluster_profiles_path(region, cluster)}{uid or 'none'}/"


class NodeClassCleanup:
    def __init__(self, clients: AWSClients, *, cluster_name: str) -> None:
        self._clients = clients
        self.cluster_name = cluster_name

    async def delete_instance_profiles(self, uid: str | None) -> list[str]:
        """Delete the profiles under the class's path (roles removed first); their names."""
        path = instance_profile_path(self._clients.region, self.cluster_name, uid)
        return await self._delete_profiles(path, lambda profile: profile.get("Path") == path)

    async def delete_unused_instance_profiles(
        self, in_use: Collection[str], *, created_before: datetime
    ) -> list[str]:
        """Delete this cluster's profiles that are not `in_use` and were created before
        `created_before` (a profile made a moment ago may not be in any status yet)."""
        path = cluster_profiles_path(self._clients.region, self.cluster_name)

        def unused(profile: Mapping[str, Any]) -> bool:
            created = profile.get("CreateDate")
            return (
                str(profile.get("Path") or "").startswith(path)
                and profile.get("InstanceProfileName") not in in_use
                and isinstance(created, datetime)
                and created < created_before
            )

        return await self._delete_profiles(path, unused)

    async def _delete_profiles(
        self, prefix: str, chosen: Callable[[Mapping[str, Any]], bool]
    ) -> list[str]:
        deleted: list[str] = []
        async with self._clients.client("iam") as iam:
            paginator = iam.get_paginator("list_instance_profiles")
            profiles = [
                profile
                async for page in paginator.paginate(PathPrefix=prefix)
                for profile in page.get("InstanceProfiles") or ()
                if chosen(profile)
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
        return await self.delete_cluster_launch_templates(
            lambda _template: True,
            extra_filters=[{"Name": f"tag:{aws.TAG_NODECLASS}", "Values": [nodeclass]}],
        )

    async def delete_cluster_launch_templates(
        self,
        unused: Callable[[Mapping[str, Any]], bool],
        *,
        extra_filters: Collection[Mapping[str, Any]] = (),
    ) -> list[str]:
        """Delete the cluster's launch templates (tagged with its name) that `unused` picks
        from `DescribeLaunchTemplates`'s entries; their names."""
        filters = [
            {"Name": f"tag:{aws.TAG_EKS_CLUSTER_NAME}", "Values": [self.cluster_name]},
            *extra_filters,
        ]
        deleted: list[str] = []
        async with self._clients.client("ec2") as ec2:
            paginator = ec2.get_paginator("describe_launch_templates")
            templates = [
                template
                async for page in paginator.paginate(Filters=filters)
                for template in page.get("LaunchTemplates") or ()
                if unused(template)
            ]
            for template in templates:
                try:
                    await ec2.delete_launch_template(LaunchTemplateId=template["LaunchTemplateId"])
                except ClientError as error:
                    if error_code(error) not in LT_NOT_FOUND:
                        raise
                deleted.append(str(template["LaunchTemplateName"]))
        return deleted
