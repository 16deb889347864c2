"""The AWS `CloudProvider`: finds a NodeClaim's EC2NodeClass and instance types, then hands the
launch, reads and terminations to `AWSInstances`.

The EC2NodeClass comes from `nodeclass_of` (in `karpy run`, the informer cache with an API read
as fallback), already resolved by the EC2NodeClass controller: its status carries the subnets,
security groups, AMIs and instance profile a launch needs, and its `Ready` condition gates it.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Final

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import KIND, EC2NodeClass
from karpy.apis.v1 import NodeClaim, NodePool
from karpy.apis.v1.common import NodeClassReference
from karpy.cloudprovider.aws import drift
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError
from karpy.cloudprovider.aws.instances import AWSInstances
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.overlays import LaunchOverlays
from karpy.cloudprovider.types import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)
from karpy.scheduling.instancetypes import InstanceType

__all__ = ["REPAIR_POLICIES", "AWSCloudProvider", "NodeClassLookup"]

NodeClassLookup = Callable[[str], Awaitable[EC2NodeClass | None]]
"""The EC2NodeClass of a name, or None when there is none."""

REPAIR_POLICIES: Final = (
    RepairPolicy("Ready", "False", timedelta(minutes=30)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=30)),
)
"""A kubelet that has not been Ready for 30 minutes (Karpenter's AWS provider's policy)."""


class AWSCloudProvider:
    """EC2 instances for NodeClaims whose nodeClassRef is an EC2NodeClass."""

    def __init__(
        self,
        *,
        nodeclass_of: NodeClassLookup,
        instance_types: InstanceTypeProvider,
        instances: AWSInstances,
        resolver: NodeClassResolver | None = None,
        clients: AWSClients | None = None,
        overlays: LaunchOverlays | None = None,
    ) -> None:
        self.nodeclass_of = nodeclass_of
        self.overlays = overlays or LaunchOverlays(None)
        """The NodeOverlays a launch buys at (the scheduler planned with them)."""
        self.clients = clients
        """The API clients the provider's parts share (closed with `close`)."""
        self.resolver = resolver
        """What the EC2NodeClass controller resolves classes with (the plugin adds it)."""
        self.instance_types = instance_types
        self.instances = instances

    @property
    def name(self) -> str:
        return "aws"

    async def _nodeclass(self, ref: NodeClassReference) -> EC2NodeClass:
        if ref.group_name() != aws.GROUP or ref.kind != KIND:
            raise NodeClassNotReadyError(
                f"nodeClassRef {ref.group_name()}/{ref.kind} is not served by the aws provider"
            )
        nodeclass = await self.nodeclass_of(ref.name)
        if nodeclass is None:
            raise InsufficientCapacityError(f'EC2NodeClass "{ref.name}" not found')
        if nodeclass.metadata.deletion_timestamp is not None:
            raise NodeClassNotReadyError(f'EC2NodeClass "{ref.name}" is terminating')
        return nodeclass

    async def create(self, claim: NodeClaim) -> NodeClaim:
        nodeclass = await self._nodeclass(claim.spec.node_class_ref)
        _require_ready(nodeclass)
        types = await self.instance_types.for_nodeclass(nodeclass)
        return await self.instances.create(claim, nodeclass, self.overlays.apply(claim, types))

    async def delete(self, claim: NodeClaim) -> None:
        await self.instances.delete(claim)

    async def get(self, provider_id: str) -> NodeClaim:
        return await self.instances.get(provider_id)

    async def list(self) -> builtins.list[NodeClaim]:
        return await self.instances.list()

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        """The types of the NodePool's EC2NodeClass; none while it is missing or not served."""
        try:
            nodeclass = await self._nodeclass(nodepool.spec.template.spec.node_class_ref)
        except (InsufficientCapacityError, NodeClassNotReadyError):
            return []
        return await self.instance_types.for_nodeclass(nodeclass)

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        """Karpenter's drift reason for the claim (see `drift.py`), or None. A claim whose
        EC2NodeClass is gone, or whose instance is gone, is not drifted: there is nothing to
        compare (garbage collection handles the instance)."""
        try:
            nodeclass = await self._nodeclass(claim.spec.node_class_ref)
        except (InsufficientCapacityError, NodeClassNotReadyError):
            return None
        reason = drift.static_drift(claim, nodeclass)
        if reason is None:
            types = await self.instance_types.for_nodeclass(nodeclass)
            reason = drift.ami_drift(claim, nodeclass, types)
        provider_id = claim.status.provider_id if claim.status else None
        if reason is None and provider_id:
            try:
                instance = await self.instances.describe(provider_id)
            except NodeClaimNotFoundError:
                return None
            reason = drift.instance_drift(instance, nodeclass)
        selector = nodeclass.spec.placement_group_selector
        if reason is None:
            if selector is None:
                reason = drift.placement_group_drift(claim, None)
            else:
                try:
                    group = await self.instances.placement_groups.get(selector)
                except ClientError:
                    group = None
                # A group that cannot be read now says nothing (the class is not Ready).
                if group is not None:
                    reason = drift.placement_group_drift(claim, group.id)
        return reason

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return list(REPAIR_POLICIES)

    async def close(self) -> None:
        """Close the shared API clients and their connection pools."""
        if self.clients is not None:
            await self.clients.close()


def _require_ready(nodeclass: EC2NodeClass) -> None:
    """Karpenter launches only with a class whose `Ready` is True for its current generation
    (a denied dry-run or an unresolved selector must not reach CreateFleet)."""
    name = nodeclass.metadata.name
    conditions = nodeclass.status.conditions if nodeclass.status else None
    ready = next((c for c in conditions or () if c.type == "Ready"), None)
    if ready is None or ready.status != "True":
        detail = f": {ready.message}" if ready is not None and ready.message else ""
        raise NodeClassNotReadyError(f'EC2NodeClass "{name}" is not ready{detail}')
    if ready.observed_generation != nodeclass.metadata.generation:
        raise NodeClassNotReadyError(
            f'EC2NodeClass "{name}" is not ready: generation {nodeclass.metadata.generation} '
            "not yet resolved"
        )
