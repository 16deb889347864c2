"""`karpenter.sh/v1`: NodePool, NodeClaim, SchedulingConfig (karpy's extension), and the
well-known labels and conditions.

from karpy.apis.v1 import NodePool, NodeClaim, validate_nodepool

The names are loaded from their modules at first use: a program that needs only the labels
(the scheduling vocabulary, the kwok catalogue) does not build the NodeClaim and
SchedulingConfig models nor load the CEL rules' evaluator for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.v1 import conditions, labels
from karpy.lazy import lazy_attributes

if TYPE_CHECKING:
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

# name -> the module of this package that defines it
_HOME: dict[str, str] = {
    "Condition": "common",
    "NodeClaimCondition": "common",
    "NodeClaimRequirement": "common",
    "NodeClassReference": "common",
    "NodePoolRequirement": "common",
    "NodeSelectorRequirement": "common",
    "ObjectMeta": "common",
    "OwnerReference": "common",
    "Taint": "common",
    "find_condition": "common",
    "group_of_ref": "common",
    "NODECLAIM": "nodeclaim",
    "NodeClaim": "nodeclaim",
    "NodeClaimSpec": "nodeclaim",
    "NodeClaimStatus": "nodeclaim",
    "ResourceRequirements": "nodeclaim",
    "validate_nodeclaim": "nodeclaim",
    "NODEPOOL": "nodepool",
    "UNBOUNDED": "nodepool",
    "Budget": "nodepool",
    "Disruption": "nodepool",
    "NodeClaimTemplate": "nodepool",
    "NodeClaimTemplateSpec": "nodepool",
    "NodePool": "nodepool",
    "NodePoolSpec": "nodepool",
    "NodePoolStatus": "nodepool",
    "TemplateMetadata": "nodepool",
    "validate_nodepool": "nodepool",
    "runtime_validate": "nodepool_validation",
    "SCHEDULINGCONFIG": "schedulingconfig",
    "DefaultSpreadConstraint": "schedulingconfig",
    "SchedulingConfig": "schedulingconfig",
    "SchedulingConfigSpec": "schedulingconfig",
    "SchedulingConfigStatus": "schedulingconfig",
    "runtime_validate_config": "schedulingconfig",
    "validate_schedulingconfig": "schedulingconfig",
}


__getattr__ = lazy_attributes(__name__, {name: f".{home}" for name, home in _HOME.items()})


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
