"""`karpenter.sh/v1` NodeClaim: one requested node, from launch to termination. Its spec is
immutable once created; the status records the instance and the lifecycle conditions.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, Final

from pydantic import Field

from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1 import labels
from karpy.apis.v1.common import (
    REQUIREMENTS_RULES,
    Duration,
    NillableDuration,
    NodeClaimCondition,
    NodeClaimRequirement,
    NodeClassReference,
    ObjectMeta,
    ResourceList,
    Taint,
    Time,
    duration_of,
    find_condition,
    nillable_duration_of,
)

API_VERSION: Final = "karpenter.sh/v1"
KIND: Final = "NodeClaim"


class ResourceRequirements(K8sModel):
    """The resources a NodeClaim must offer."""

    requests: ResourceList | None = None
    """The minimum resources the node must have: pod requests plus daemon overhead."""


class NodeClaimSpec(K8sModel):
    """The desired state of the NodeClaim."""

    taints: Annotated[list[Taint], Schema(list_type="atomic")] | None = None
    """Taints applied to the node."""
    startup_taints: Annotated[list[Taint], Schema(list_type="atomic")] | None = None
    """Taints applied at startup and expected to be removed by a daemon."""
    requirements: Annotated[
        list[NodeClaimRequirement],
        Schema(max_items=100, list_type="atomic", rules=REQUIREMENTS_RULES),
    ]
    """Node selector requirements the launched node satisfies."""
    resources: ResourceRequirements | None = None
    """The resources the node must offer."""
    node_class_ref: NodeClassReference
    """The provider NodeClass that configures the node."""
    termination_grace_period: Duration | None = None
    """How long the node may take to drain before its pods are deleted; unset waits forever."""
    expire_after: NillableDuration = "720h"
    """Lifetime of the node from its creation; `Never` disables expiry."""

    def expire_after_duration(self) -> timedelta | None:
        """`expireAfter` as a timedelta; None means `Never`."""
        return nillable_duration_of(self.expire_after)

    def termination_grace_period_duration(self) -> timedelta | None:
        return duration_of(self.termination_grace_period)


class NodeClaimStatus(K8sModel):
    """The observed state of the NodeClaim."""

    node_name: str | None = None
    """The name of the Node that registered for this NodeClaim."""
    provider_id: str | None = Field(None, alias="providerID")
    """The cloud provider's identifier of the instance."""
    image_id: str | None = Field(None, alias="imageID")
    """The image the instance was launched from."""
    capacity: ResourceList | None = None
    """The instance's resources."""
    allocatable: ResourceList | None = None
    """The resources available to pods."""
    conditions: list[NodeClaimCondition] | None = None
    """Launched, Registered, Initialized, Ready, Drifted, Consolidatable and others."""
    last_pod_event_time: Time | None = None
    """When a pod was last scheduled to or removed from the node (drives consolidateAfter)."""


class NodeClaim(K8sModel):
    """NodeClaim is the Schema for the NodeClaims API."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: Annotated[NodeClaimSpec, Schema(rules=(Rule("self == oldSelf", "spec is immutable"),))]
    status: NodeClaimStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def nodepool_name(self) -> str | None:
        """The owning NodePool, from the `karpenter.sh/nodepool` label."""
        return (self.metadata.labels or {}).get(labels.LABEL_NODEPOOL)

    def condition(self, type_: str) -> NodeClaimCondition | None:
        found = find_condition(self.status.conditions if self.status else None, type_)
        return found if isinstance(found, NodeClaimCondition) else None


NODECLAIM = CustomResource(
    model=NodeClaim,
    group=labels.GROUP,
    version="v1",
    kind=KIND,
    plural="nodeclaims",
    singular="nodeclaim",
    printer_columns=(
        PrinterColumn("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
        PrinterColumn("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
        PrinterColumn("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
        PrinterColumn("Node", ".status.nodeName"),
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("ImageID", ".status.imageID", priority=1),
        PrinterColumn("ID", ".status.providerID", priority=1),
        PrinterColumn("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
        PrinterColumn("NodeClass", ".spec.nodeClassRef.name", priority=1),
        PrinterColumn("Drifted", '.status.conditions[?(@.type=="Drifted")].status', priority=1),
    ),
)


def validate_nodeclaim(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> NodeClaim:
    """Admit a NodeClaim as the apiserver would and return it; with `old`, any change to the
    spec is rejected (`spec is immutable`)."""
    return NODECLAIM.validate(obj, old=old)
