"""`karpenter.kwok.sh/v1alpha1` KWOKNodeClass: the NodeClass of the kwok (fake node) provider.

Its status defaults to a True `Ready` condition, as Karpenter's does: there is nothing to resolve,
so a KWOKNodeClass is usable the moment it exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, Final

from pydantic import Field

from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1.common import Condition, Duration, Int64, ObjectMeta, duration_of

GROUP: Final = "karpenter.kwok.sh"
API_VERSION: Final = "karpenter.kwok.sh/v1alpha1"
KIND: Final = "KWOKNodeClass"
LABEL_NODECLASS: Final = "karpenter.kwok.sh/kwoknodeclass"

# Instance-type labels of the kwok catalogue.
LABEL_INSTANCE_SIZE: Final = "karpenter.kwok.sh/instance-size"
LABEL_INSTANCE_FAMILY: Final = "karpenter.kwok.sh/instance-family"
LABEL_INSTANCE_CPU: Final = "karpenter.kwok.sh/instance-cpu"
LABEL_INSTANCE_MEMORY: Final = "karpenter.kwok.sh/instance-memory"

READY_STATUS_DEFAULT: Final[dict[str, Any]] = {
    "conditions": [
        {
            "lastTransitionTime": "2024-01-01T01:01:01Z",
            "message": "",
            "reason": "Ready",
            "status": "True",
            "type": "Ready",
        }
    ]
}

_RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")


class KWOKNodeClassSpec(K8sModel):
    """Settings of the fake nodes."""

    max_pods: Annotated[Int64, Schema(minimum=0)] | None = None
    """Overrides the maximum number of pods per node."""
    node_registration_delay: Duration | None = None
    """How long a fake node takes to register, to model instance start-up time."""
    reserved_resources: (
        Annotated[
            dict[str, str],
            Schema(
                rules=(
                    Rule(
                        "self.all(x, " + " || ".join(f"x=='{k}'" for k in _RESERVED_KEYS) + ")",
                        "valid keys for kubeReserved are "
                        "['cpu','memory','ephemeral-storage','pid']",
                    ),
                    Rule(
                        "self.all(x, !self[x].startsWith('-'))",
                        "kubeReserved value cannot be a negative resource quantity",
                    ),
                )
            ),
        ]
        | None
    ) = None
    """Resources subtracted from capacity to give allocatable (default 100m CPU, 10Mi memory)."""

    def registration_delay(self) -> timedelta:
        return duration_of(self.node_registration_delay) or timedelta(0)


class KWOKNodeClassStatus(K8sModel):
    """The state of the KWOKNodeClass."""

    conditions: list[Condition] | None = None
    """Health and readiness signals."""


def _ready_status() -> KWOKNodeClassStatus:
    return KWOKNodeClassStatus.model_validate(READY_STATUS_DEFAULT)


class KWOKNodeClass(K8sModel):
    """KWOKNodeClass is the Schema for the KWOKNodeClass API."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: Annotated[KWOKNodeClassSpec, Schema(emit_default=False)] = Field(
        default_factory=KWOKNodeClassSpec
    )
    status: Annotated[KWOKNodeClassStatus, Schema(default=READY_STATUS_DEFAULT)] = Field(
        default_factory=_ready_status
    )

    @property
    def name(self) -> str:
        return self.metadata.name or ""


KWOKNODECLASS = CustomResource(
    model=KWOKNodeClass,
    group=GROUP,
    version="v1alpha1",
    kind=KIND,
    plural="kwoknodeclasses",
    singular="kwoknodeclass",
    short_names=("kwoknc", "kwokncs"),
    printer_columns=(
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
)


def validate_kwoknodeclass(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> KWOKNodeClass:
    """Admit a KWOKNodeClass manifest as the apiserver would and return it."""
    return KWOKNODECLASS.validate(obj, old=old)
