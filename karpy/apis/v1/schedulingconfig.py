"""`karpenter.sh/v1` SchedulingConfig: cluster-wide guard rails and scheduling parameters.

karpy's extension (Karpenter has no such kind). A SchedulingConfig's `requirements` are added to
those of every NodePool whose template references its `nodeClassRef` (every NodePool when it is
absent), with the same operators, `minValues` and rules as NodePool requirements. The config
named `default` may also carry the scheduling parameters that otherwise come from settings
(batch window, preference and minValues policies, default topology spread constraints); it wins
over the settings while it exists, without a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Schema
from karpy.apis.v1 import labels
from karpy.apis.v1.common import (
    QUALIFIED_NAME_PATTERN,
    REQUIREMENTS_RULES,
    Condition,
    Duration,
    Int32,
    Int64,
    NodeClassReference,
    NodePoolRequirement,
    ObjectMeta,
)
from karpy.apis.v1.nodepool_validation import requirement_errors

__all__ = [
    "API_VERSION",
    "DEFAULT_NAME",
    "KIND",
    "SCHEDULINGCONFIG",
    "DefaultSpreadConstraint",
    "SchedulingConfig",
    "SchedulingConfigSpec",
    "SchedulingConfigStatus",
    "runtime_validate_config",
    "validate_schedulingconfig",
]

API_VERSION: Final = "karpenter.sh/v1"
KIND: Final = "SchedulingConfig"
DEFAULT_NAME: Final = "default"
"""The one config whose scheduling parameters are read (the others only add requirements)."""
PARAMETERS: Final = (
    "batchIdleDuration",
    "batchMaxDuration",
    "preferencePolicy",
    "minValuesPolicy",
    "topologySpreadConstraints",
)


class DefaultSpreadConstraint(K8sModel):
    """A topology spread constraint given to pods that declare none (kube-scheduler's
    `defaultConstraints`): it spreads each pod among the pods with the same labels."""

    max_skew: Annotated[Int32, Schema(minimum=1)]
    """How unevenly the pods may be spread across the domains of `topologyKey`."""
    topology_key: Annotated[
        str, Schema(min_length=1, max_length=316, pattern=QUALIFIED_NAME_PATTERN)
    ]
    """The node label whose values are the domains (`topology.kubernetes.io/zone`, ...)."""
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = "ScheduleAnyway"
    """DoNotSchedule keeps a pod pending rather than exceed the skew; ScheduleAnyway prefers."""


class SchedulingConfigSpec(K8sModel):
    """What the config adds to the NodePools it applies to, and (on `default`) the parameters."""

    node_class_ref: NodeClassReference | None = None
    """The NodeClass whose NodePools the config applies to; unset applies to every NodePool."""
    requirements: (
        Annotated[
            list[NodePoolRequirement],
            Schema(max_items=100, list_type="atomic", rules=REQUIREMENTS_RULES),
        ]
        | None
    ) = None
    """Requirements added to each such NodePool's own (both must hold)."""
    batch_idle_duration: Duration | None = None
    """`default` only: how long the provisioner waits for more pods after the last one
    (BATCH_IDLE_DURATION)."""
    batch_max_duration: Duration | None = None
    """`default` only: the longest a batch stays open (BATCH_MAX_DURATION)."""
    preference_policy: Literal["Respect", "Ignore"] | None = None
    """`default` only: Respect or Ignore preferred affinities and ScheduleAnyway spreads
    (PREFERENCE_POLICY)."""
    min_values_policy: Literal["Strict", "BestEffort"] | None = None
    """`default` only: Strict or BestEffort minValues (MIN_VALUES_POLICY)."""
    topology_spread_constraints: (
        Annotated[list[DefaultSpreadConstraint], Schema(max_items=10, list_type="atomic")] | None
    ) = None
    """`default` only: spread constraints given to pending pods that declare none."""

    def parameters(self) -> dict[str, Any]:
        """The scheduling parameters this spec sets (API names), for messages."""
        dumped = self.to_dict()
        return {k: dumped[k] for k in PARAMETERS if k in dumped}


class SchedulingConfigStatus(K8sModel):
    """The observed state of a SchedulingConfig."""

    node_pools: Annotated[list[str], Schema(list_type="atomic")] | None = None
    """The NodePools the config applies to."""
    observed_generation: Int64 | None = None
    """The generation this status was computed from."""
    conditions: list[Condition] | None = None
    """ValidationSucceeded and Ready."""


class SchedulingConfig(K8sModel):
    """SchedulingConfig is the Schema for the SchedulingConfigs API (a karpy extension)."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: SchedulingConfigSpec
    status: SchedulingConfigStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""


SCHEDULINGCONFIG = CustomResource(
    model=SchedulingConfig,
    group=labels.GROUP,
    version="v1",
    kind=KIND,
    plural="schedulingconfigs",
    singular="schedulingconfig",
    printer_columns=(
        PrinterColumn("NodeClass", ".spec.nodeClassRef.name"),
        PrinterColumn("NodePools", ".status.nodePools"),
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
    optional=True,
)


def validate_schedulingconfig(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> SchedulingConfig:
    """Admit a SchedulingConfig manifest as the apiserver would and return it; raises
    `karpy.apis.ValidationError` naming each offending field path."""
    return SCHEDULINGCONFIG.validate(obj, old=old)


def runtime_validate_config(config: SchedulingConfig) -> list[str]:
    """Every problem the CRD cannot express (the `ValidationSucceeded` condition): requirement
    keys and values as NodePool validation checks them, and scheduling parameters on a config
    other than `default` (they would be ignored)."""
    errors: list[str] = []
    for index, requirement in enumerate(config.spec.requirements or ()):
        errors.extend(requirement_errors(f"spec.requirements[{index}]", requirement))
    if config.name != DEFAULT_NAME:
        for key in config.spec.parameters():
            errors.append(
                f"spec.{key}: scheduling parameters are read only from the SchedulingConfig "
                f"named {DEFAULT_NAME!r}; this one would be ignored"
            )
    return errors
