"""`karpenter.sh/v1`: NodePool, NodeClaim, SchedulingConfig (karpy's extension), and the
well-known labels and conditions.

from karpy.apis.v1 import NodePool, NodeClaim, validate_nodepool
"""

from __future__ import annotations

from karpy.apis.v1 import conditions, labels
from karpy.apis.v1.common import (
    Condition,
    NodeClaimCondition,
    NodeClaimRequirement,
    NodeClassReference,
    NodePoolRequirement,
    NodeSelectorRequirement,
    ObjectMeta,
    OwnerReference,
    Taint,
    find_condition,
    group_of_ref,
)
from karpy.apis.v1.nodeclaim import (
    NODECLAIM,
    NodeClaim,
    NodeClaimSpec,
    NodeClaimStatus,
    ResourceRequirements,
    validate_nodeclaim,
)
from karpy.apis.v1.nodepool import (
    NODEPOOL,
    UNBOUNDED,
    Budget,
    Disruption,
    NodeClaimTemplate,
    NodeClaimTemplateSpec,
    NodePool,
    NodePoolSpec,
    NodePoolStatus,
    TemplateMetadata,
    validate_nodepool,
)
from karpy.apis.v1.nodepool_validation import runtime_validate
from karpy.apis.v1.schedulingconfig import (
    SCHEDULINGCONFIG,
    DefaultSpreadConstraint,
    SchedulingConfig,
    SchedulingConfigSpec,
    SchedulingConfigStatus,
    runtime_validate_config,
    validate_schedulingconfig,
)

__all__ = [
    "NODECLAIM",
    "NODEPOOL",
    "SCHEDULINGCONFIG",
    "UNBOUNDED",
    "Budget",
    "Condition",
    "DefaultSpreadConstraint",
    "Disruption",
    "NodeClaim",
    "NodeClaimCondition",
    "NodeClaimRequirement",
    "NodeClaimSpec",
    "NodeClaimStatus",
    "NodeClaimTemplate",
    "NodeClaimTemplateSpec",
    "NodeClassReference",
    "NodePool",
    "NodePoolRequirement",
    "NodePoolSpec",
    "NodePoolStatus",
    "NodeSelectorRequirement",
    "ObjectMeta",
    "OwnerReference",
    "ResourceRequirements",
    "SchedulingConfig",
    "SchedulingConfigSpec",
    "SchedulingConfigStatus",
    "Taint",
    "TemplateMetadata",
    "conditions",
    "find_condition",
    "group_of_ref",
    "labels",
    "runtime_validate",
    "runtime_validate_config",
    "validate_nodeclaim",
    "validate_nodepool",
    "validate_schedulingconfig",
]
