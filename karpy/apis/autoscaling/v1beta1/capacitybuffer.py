"""`autoscaling.x-k8s.io/v1beta1` CapacityBuffer: spare capacity kept ready before pods need it.

SIG Autoscaling's API (kubernetes/autoscaler, served by Cluster Autoscaler and by Karpenter): a
namespaced buffer names the shape of one chunk (a PodTemplate, or a workload with a scale
subresource whose pod template is used) and how many chunks to keep room for (`replicas`, a
`percentage` of the workload's replicas, capped or sized by `limits`). The autoscaler resolves
the buffer into its status (`podTemplateRef`, `replicas`, `podTemplateGeneration`, the
`ReadyForProvisioning` and `Provisioning` conditions) and schedules that many virtual pods of the
template in every pass, so nodes with room for them exist before real pods arrive.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import Field

from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1.common import Condition, Int32, Int64, ObjectMeta, ResourceList

__all__ = [
    "ACTIVE_CAPACITY",
    "API_VERSION",
    "CAPACITYBUFFER",
    "CONDITION_PROVISIONING",
    "CONDITION_READY_FOR_PROVISIONING",
    "GROUP",
    "KIND",
    "REASON_BUFFER_EMPTY",
    "REASON_FITS_EXISTING_CAPACITY",
    "REASON_NOT_READY_FOR_PROVISIONING",
    "REASON_POD_TEMPLATE_NOT_FOUND",
    "REASON_REQUIRES_NEW_CAPACITY",
    "REASON_RESOLUTION_FAILED",
    "REASON_RESOLVED",
    "REASON_SCALABLE_REF_NOT_FOUND",
    "CapacityBuffer",
    "CapacityBufferSpec",
    "CapacityBufferStatus",
    "LocalObjectRef",
    "ScalableRef",
    "validate_capacitybuffer",
]

GROUP: Final = "autoscaling.x-k8s.io"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "CapacityBuffer"
ACTIVE_CAPACITY: Final = "buffer.x-k8s.io/active-capacity"
"""The one provisioning strategy: keep room for the buffer's chunks at all times."""
CONDITION_READY_FOR_PROVISIONING: Final = "ReadyForProvisioning"
"""True once the buffer resolved to a pod template and a number of chunks."""
CONDITION_PROVISIONING: Final = "Provisioning"
"""True when the buffer's virtual pods all fit on existing capacity (the provisioner's word)."""

# Karpenter's reasons, so scripts and `kubectl wait` written against it read the same words.
# On ReadyForProvisioning (the status controller's):
REASON_RESOLVED: Final = "Resolved"
REASON_SCALABLE_REF_NOT_FOUND: Final = "ScalableRefNotFound"
REASON_POD_TEMPLATE_NOT_FOUND: Final = "PodTemplateNotFound"
REASON_RESOLUTION_FAILED: Final = "ResolutionFailed"
# On Provisioning (the provisioner's, after each scheduling pass):
REASON_FITS_EXISTING_CAPACITY: Final = "FitsExistingCapacity"
REASON_REQUIRES_NEW_CAPACITY: Final = "RequiresNewCapacity"
REASON_NOT_READY_FOR_PROVISIONING: Final = "NotReadyForProvisioning"
REASON_BUFFER_EMPTY: Final = "BufferEmpty"

_SPEC_RULES: Final = (
    # upstream's wording, kept so tooling matching on it keeps working
    Rule(
        "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",
        "If X is set, replicas or limits must also be set",
    ),
    Rule(
        "!(has(self.podTemplateRef) && has(self.scalableRef))",
        "You must define either PodTemplateRef or ScalableRef, but not both",
    ),
)


class LocalObjectRef(K8sModel):
    """The name of an object in the buffer's namespace."""

    name: Annotated[str, Schema(min_length=1)]
    """Name of the object."""


class ScalableRef(K8sModel):
    """An object with a scale subresource (Deployment, ReplicaSet, StatefulSet, ...)."""

    api_group: str | None = None
    """APIGroup of the scalable object; empty for the core API group."""
    kind: Annotated[str, Schema(min_length=1)]
    """Kind of the scalable object (e.g. "Deployment", "StatefulSet")."""
    name: Annotated[str, Schema(min_length=1)]
    """Name of the scalable object."""


class CapacityBufferSpec(K8sModel):
    """The desired characteristics of the buffer."""

    provisioning_strategy: Annotated[str, Schema(default=ACTIVE_CAPACITY)] | None = None
    """How the buffer is used; "buffer.x-k8s.io/active-capacity" (the default) keeps room for
    placeholder pods at all times."""
    pod_template_ref: LocalObjectRef | None = None
    """A PodTemplate in the buffer's namespace: the shape of one chunk. Exactly one of
    `podTemplateRef` and `scalableRef` should be set."""
    scalable_ref: ScalableRef | None = None
    """A workload with a scale subresource whose pod template is one chunk. Exactly one of
    `podTemplateRef` and `scalableRef` should be set."""
    replicas: Annotated[Int32, Schema(minimum=0)] | None = None
    """The number of chunks; with `percentage` too, the larger of the two; with neither, as
    many chunks as fit within `limits`."""
    percentage: Annotated[Int32, Schema(minimum=0)] | None = None
    """Chunks as a percentage of the `scalableRef`'s current replicas, rounded up (only with
    `scalableRef`)."""
    limits: ResourceList | None = None
    """The most the chunks together may request (e.g. cpu, memory): caps the number of chunks,
    or sizes it when neither `replicas` nor `percentage` is set."""


class CapacityBufferStatus(K8sModel):
    """The observed state of the buffer: what it resolved to and whether it is provisioned."""

    pod_template_ref: LocalObjectRef | None = None
    """The PodTemplate the buffer's chunks are made from."""
    replicas: Int32 | None = None
    """The number of chunks the autoscaler keeps room for."""
    pod_template_generation: Int64 | None = None
    """The PodTemplate's generation the status was computed from."""
    conditions: list[Condition] | None = None
    """ReadyForProvisioning and Provisioning."""
    provisioning_strategy: str | None = None
    """The strategy in use."""


class CapacityBuffer(K8sModel):
    """CapacityBuffer is the configuration an autoscaler uses to keep buffer capacity in a
    cluster: placeholder pods that make nodes come up ahead of the pods that need them."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: Annotated[CapacityBufferSpec, Schema(rules=_SPEC_RULES)]
    status: CapacityBufferStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or "default"


CAPACITYBUFFER = CustomResource(
    model=CapacityBuffer,
    group=GROUP,
    version=VERSION,
    kind=KIND,
    plural="capacitybuffers",
    singular="capacitybuffer",
    short_names=("cb",),
    categories=(),
    scope="Namespaced",
    printer_columns=(
        PrinterColumn(
            "Strategy", ".spec.provisioningStrategy", description="The strategy to be used."
        ),
        PrinterColumn(
            "PodTemplate",
            ".status.podTemplateRef.name",
            description="The name of the PodTemplate used.",
        ),
        PrinterColumn(
            "Replicas",
            ".status.replicas",
            "integer",
            description="The actual number of buffer chunks.",
        ),
        PrinterColumn(
            "ConditionsType",
            ".status.conditions[*].type",
            description="List of all condition types.",
        ),
        PrinterColumn(
            "ConditionsStatus",
            ".status.conditions[*].status",
            description="List of all condition statuses.",
        ),
        PrinterColumn(
            "ConditionsReason",
            ".status.conditions[*].reason",
            description="List of all condition reasons.",
        ),
        PrinterColumn(
            "Age",
            ".metadata.creationTimestamp",
            "date",
            description="The age of the CapacityBuffer.",
        ),
    ),
    # Cluster Autoscaler's CRD, absent from Karpenter's charts: karpy runs without it.
    optional=True,
)


def validate_capacitybuffer(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> CapacityBuffer:
    """Admit a CapacityBuffer manifest as the apiserver would and return it; raises
    `karpy.apis.ValidationError` naming each offending field path."""
    return CAPACITYBUFFER.validate(obj, old=old)
