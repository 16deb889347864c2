"""`nodeclass`: resolve each EC2NodeClass against EC2, SSM and IAM and write what was found.

The status gets the subnets, security groups, AMIs, instance profile and the conditions (each
with the generation it describes, and `Ready` over them all); the object gets the NodeClass hash
annotations. A class that is not Ready is looked at again after a minute, a Ready one after five
(Karpenter's requeue times), so new subnets or AMIs show up without an edit. Finalization
(instance profiles, launch templates) is not done yet: a deleted class leaves them behind.
"""

from __future__ import annotations

from typing import Any, Final

import structlog

from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClass
from karpy.apis.descriptors import EC2NODECLASSES
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.nodeclasshash import hash_annotations
from karpy.kube import Client, Clock, Informer, NotFoundError, RealClock, Result
from karpy.kube.builder import Builder

__all__ = ["NAME", "EC2NodeClassController"]

NAME: Final = "nodeclass"
NOT_READY_REQUEUE: Final = 60.0
READY_REQUEUE: Final = 300.0
log = structlog.get_logger("karpy.cloudprovider.aws.nodeclass")


class EC2NodeClassController:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodeclasses: Informer,
        resolver: NodeClassResolver,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.clock = clock or RealClock()
        self.nodeclasses = nodeclasses
        self.resolver = resolver

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclasses).workers(10).log_kind("EC2NodeClass")

    async def reconcile(self, name: str) -> Result | None:
        obj = self.nodeclasses.get(name)
        if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
            return None
        nodeclass = EC2NodeClass.model_validate(obj)
        resolution = await self.resolver.resolve(nodeclass)
        resolved = resolution.apply(nodeclass)
        status: dict[str, Any] = resolved.status.to_dict() if resolved.status else {}
        try:
            if status != (obj.get("status") or {}):
                # Merge patch: lists are replaced whole; absent keys are cleared with null.
                cleared = {k: None for k in obj.get("status") or {} if k not in status}
                await self.client.patch_status(EC2NODECLASSES, name, {"status": status | cleared})
            desired = hash_annotations(nodeclass)
            current = (obj.get("metadata") or {}).get("annotations") or {}
            if any(current.get(k) != v for k, v in desired.items()):
                await self.client.patch(
                    EC2NODECLASSES, name, {"metadata": {"annotations": desired}}
                )
        except NotFoundError:
            return None
        return Result(requeue_after=READY_REQUEUE if resolution.ready else NOT_READY_REQUEUE)
