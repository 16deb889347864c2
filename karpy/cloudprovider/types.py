"""The seam between karpy's controllers and a cloud: what a provider must do, and the errors
it may raise. Controllers depend only on this module; `aws` and `kwok` implement it, and
decorators (metrics, fault injection in tests) wrap any implementation.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol, runtime_checkable

from karpy.apis.v1 import NodeClaim, NodePool
from karpy.scheduling.instancetypes import InstanceType

__all__ = [
    "CloudProvider",
    "CloudProviderError",
    "CreateError",
    "InsufficientCapacityError",
    "NodeClaimNotFoundError",
    "NodeClassNotReadyError",
    "RepairPolicy",
]


class CloudProviderError(Exception):
    """Base class of the errors a provider reports on purpose."""


class InsufficientCapacityError(CloudProviderError):
    """No compatible offering could be launched; the NodeClaim is deleted and pods retried."""


class NodeClassNotReadyError(CloudProviderError):
    """The NodeClaim's NodeClass is missing or not Ready; the NodeClaim is deleted."""


class NodeClaimNotFoundError(CloudProviderError):
    """The instance does not exist (any more). `delete` raises it once the instance is gone."""


class CreateError(CloudProviderError):
    """A launch failed for a reason worth showing on the NodeClaim's `Launched` condition."""

    def __init__(self, message: str, *, reason: str = "LaunchFailed") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A node condition that, held for `toleration`, makes the node eligible for repair."""

    condition_type: str
    condition_status: str
    toleration: timedelta


@runtime_checkable
class CloudProvider(Protocol):
    """What karpy needs from a cloud.

    `create` must be idempotent per NodeClaim: it derives an idempotency key from the
    NodeClaim's UID (EC2 CreateFleet `ClientToken`; a deterministic node name for kwok), so a
    crash between the launch and the status write never launches a second instance.
    """

    @property
    def name(self) -> str:
        """Short provider name used in metrics and logs (`aws`, `kwok`)."""
        ...

    async def create(self, claim: NodeClaim) -> NodeClaim:
        """Launch an instance for `claim`; return it with providerID, labels, capacity and
        allocatable filled in."""
        ...

    async def delete(self, claim: NodeClaim) -> None:
        """Terminate the claim's instance; raise `NodeClaimNotFoundError` once it is gone."""
        ...

    async def get(self, provider_id: str) -> NodeClaim:
        """The instance as a NodeClaim; `NodeClaimNotFoundError` if it does not exist."""
        ...

    async def list(self) -> builtins.list[NodeClaim]:
        """Every instance this provider launched for this cluster."""
        ...

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        """Every instance type the NodePool could use, including ones with no available
        offering right now."""
        ...

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        """A drift reason when the instance no longer matches its NodeClass, else None."""
        ...

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        """Node conditions that mean the node is broken beyond waiting."""
        ...
