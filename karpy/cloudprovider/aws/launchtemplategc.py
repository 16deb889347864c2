"""`launchtemplate.garbagecollection`: delete the launch templates of live EC2NodeClasses that
launches no longer use.

A template's name is the hash of its contents (`launch.py`), so a changed input (a new AMI, an
edited class, other kubelet settings) makes a new template and leaves the old one behind; only
the class's finalizer removed them before. Karpenter keeps the templates it uses in a cache and
deletes one when it has gone unused for the cache's lifetime (and, after a restart, the ones it
found and has not used since). Here, every `PERIOD`, a template tagged for this cluster is
deleted when all of these hold:

- no launch asked for it in the last `UNUSED_FOR` (a launch refreshes it; after a restart none
  has, so every old template counts as unused from then on);
- it was created more than `UNUSED_FOR` ago (another replica's launch may just have made it);
- no NodeClaim of its EC2NodeClass is launching (created, no instance yet): a CreateFleet may be
  about to name it.

A template still needed is simply made again by the next launch (one DescribeLaunchTemplates and
one CreateLaunchTemplate). Instances never need their template after launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import KIND
from karpy.cloudprovider.aws.cleanup import NodeClassCleanup
from karpy.cloudprovider.aws.launch import LAUNCH_TEMPLATE_PREFIX, LaunchTemplates
from karpy.kube import Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder, singleton

__all__ = ["NAME", "PERIOD", "UNUSED_FOR", "LaunchTemplateGC"]

NAME: Final = "launchtemplate.garbagecollection"
PERIOD: Final = 5 * 60.0
UNUSED_FOR: Final = timedelta(minutes=10)
log = structlog.get_logger("karpy.cloudprovider.aws.launchtemplate")


class LaunchTemplateGC:
    name: Final = NAME

    def __init__(
        self,
        *,
        nodeclaims: Informer,
        templates: LaunchTemplates,
        cleanup: NodeClassCleanup,
        clock: Clock | None = None,
        unused_for: timedelta = UNUSED_FOR,
    ) -> None:
        self.nodeclaims = nodeclaims
        self.templates = templates
        self.cleanup = cleanup
        self.clock = clock or RealClock()
        self.unused_for = unused_for

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    def launching(self) -> set[str]:
        """The EC2NodeClasses with a NodeClaim whose instance is not launched yet."""
        classes: set[str] = set()
        for claim in self.nodeclaims.list():
            meta = claim.get("metadata") or {}
            ref = (claim.get("spec") or {}).get("nodeClassRef") or {}
            if ref.get("kind") != KIND or meta.get("deletionTimestamp"):
                continue
            if not (claim.get("status") or {}).get("providerID"):
                classes.add(str(ref.get("name") or ""))
        return classes

    def unused(self, template: Mapping[str, Any], launching: set[str]) -> bool:
        name = str(template.get("LaunchTemplateName") or "")
        if not name.startswith(LAUNCH_TEMPLATE_PREFIX):
            return False
        if self.templates.used_within(name, self.unused_for):
            return False
        created = template.get("CreateTime")
        if not isinstance(created, datetime):
            return False
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        if self.clock.wall() - created < self.unused_for:
            return False
        tags = {str(t.get("Key")): str(t.get("Value")) for t in template.get("Tags") or ()}
        return tags.get(aws.TAG_NODECLASS) not in launching

    async def reconcile(self, _key: str) -> Result | None:
        launching = self.launching()
        deleted = await self.cleanup.delete_cluster_launch_templates(
            lambda template: self.unused(template, launching)
        )
        for name in deleted:
            self.templates.forget(name)
        if deleted:
            log.info("deleted unused launch templates", names=deleted)
        return Result(requeue_after=PERIOD)
