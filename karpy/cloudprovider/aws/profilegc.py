"""`instanceprofile.garbagecollection`: every 30 minutes, delete the instance profiles karpy
created for this cluster that no EC2NodeClass status and no NodeClaim
(`karpenter.k8s.aws/instance-profile-name`) names any more (Karpenter's §1.6 controller).

Profiles younger than an hour are kept: one just made for a class may not be in its status yet
(Karpenter protects new profiles for the same hour). Not run in an isolated VPC, as Karpenter.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.cloudprovider.aws.cleanup import NodeClassCleanup
from karpy.kube import Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder, singleton

__all__ = ["NAME", "PROTECTED_FOR", "InstanceProfileGC"]

NAME: Final = "instanceprofile.garbagecollection"
PERIOD: Final = 30 * 60.0
PROTECTED_FOR: Final = timedelta(hours=1)
log = structlog.get_logger("karpy.cloudprovider.aws.instanceprofile")


class InstanceProfileGC:
    name: Final = NAME

    def __init__(
        self,
        *,
        nodeclasses: Informer,
        nodeclaims: Informer,
        cleanup: NodeClassCleanup,
        clock: Clock | None = None,
    ) -> None:
        self.nodeclasses = nodeclasses
        self.nodeclaims = nodeclaims
        self.cleanup = cleanup
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    def in_use(self) -> set[str]:
        names = {
            str((nc.get("status") or {}).get("instanceProfile"))
            for nc in self.nodeclasses.list()
            if (nc.get("status") or {}).get("instanceProfile")
        }
        for claim in self.nodeclaims.list():
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if annotations.get(aws.ANNOTATION_INSTANCE_PROFILE_NAME):
                names.add(str(annotations[aws.ANNOTATION_INSTANCE_PROFILE_NAME]))
        return names

    async def reconcile(self, _key: str) -> Result | None:
        deleted = await self.cleanup.delete_unused_instance_profiles(
            self.in_use(), created_before=self.clock.wall() - PROTECTED_FOR
        )
        if deleted:
            log.info("deleted unused instance profiles", names=deleted)
        return Result(requeue_after=PERIOD)
