"""Status condition types and reasons of the karpenter.sh kinds, spelled as Karpenter spells them.

Dashboards, alerts and `kubectl wait --for=condition=...` refer to these names. Conditions follow
operatorpkg's conventions: a True condition's reason is its own type, a fresh one is Unknown with
`AwaitingReconciliation`, and `Ready` is the root condition that is True only when every
dependent condition is.
"""

from __future__ import annotations

from typing import Final

# --- conventions shared by every kind ------------------------------------------------------
CONDITION_READY: Final = "Ready"
STATUS_TRUE: Final = "True"
STATUS_FALSE: Final = "False"
STATUS_UNKNOWN: Final = "Unknown"
REASON_AWAITING_RECONCILIATION: Final = "AwaitingReconciliation"
MESSAGE_AWAITING_RECONCILIATION: Final = "object is awaiting reconciliation"
REASON_UNHEALTHY_DEPENDENTS: Final = "UnhealthyDependents"

# --- NodePool ------------------------------------------------------------------------------
NODEPOOL_VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
NODEPOOL_NODECLASS_READY: Final = "NodeClassReady"
NODEPOOL_NODE_REGISTRATION_HEALTHY: Final = "NodeRegistrationHealthy"
# Ready = ValidationSucceeded and NodeClassReady (registration health is informative).
NODEPOOL_READY_DEPENDENTS: Final = (NODEPOOL_VALIDATION_SUCCEEDED, NODEPOOL_NODECLASS_READY)

REASON_NODEPOOL_VALIDATION_FAILED: Final = "NodePoolValidationFailed"
REASON_NODECLASS_NOT_FOUND: Final = "NodeClassNotFound"
REASON_NODECLASS_TERMINATING: Final = "NodeClassTerminating"
REASON_NODECLASS_NOT_READY: Final = "NodeClassNotReady"
REASON_REGISTRATION_FAILED: Final = "RegistrationFailed"
# karpy's extension: set only while some SchedulingConfig applies to the NodePool; not a
# dependent of Ready (a NodePool a config makes unsatisfiable is left out of every plan).
NODEPOOL_SCHEDULING_CONFIG_COMPATIBLE: Final = "SchedulingConfigCompatible"
REASON_SCHEDULING_CONFIG_CONFLICT: Final = "SchedulingConfigConflict"

# --- SchedulingConfig (karpy's extension) ---------------------------------------------------
SCHEDULINGCONFIG_VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
SCHEDULINGCONFIG_READY_DEPENDENTS: Final = (SCHEDULINGCONFIG_VALIDATION_SUCCEEDED,)
REASON_SCHEDULINGCONFIG_VALIDATION_FAILED: Final = "SchedulingConfigValidationFailed"

# --- NodeOverlay (karpenter.sh/v1alpha1) ------------------------------------------------------
NODEOVERLAY_VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
NODEOVERLAY_READY_DEPENDENTS: Final = (NODEOVERLAY_VALIDATION_SUCCEEDED,)
REASON_NODEOVERLAY_CONFLICT: Final = "Conflict"
REASON_NODEOVERLAY_RUNTIME_VALIDATION: Final = "RuntimeValidation"

# --- NodeClaim -----------------------------------------------------------------------------
NODECLAIM_LAUNCHED: Final = "Launched"
NODECLAIM_REGISTERED: Final = "Registered"
NODECLAIM_INITIALIZED: Final = "Initialized"
NODECLAIM_CONSOLIDATABLE: Final = "Consolidatable"
NODECLAIM_DRIFTED: Final = "Drifted"
NODECLAIM_DRAINED: Final = "Drained"
NODECLAIM_VOLUMES_DETACHED: Final = "VolumesDetached"
NODECLAIM_INSTANCE_TERMINATING: Final = "InstanceTerminating"
NODECLAIM_CONSISTENT_STATE_FOUND: Final = "ConsistentStateFound"
NODECLAIM_DISRUPTION_REASON: Final = "DisruptionReason"
# Ready = Launched and Registered and Initialized.
NODECLAIM_READY_DEPENDENTS: Final = (
    NODECLAIM_LAUNCHED,
    NODECLAIM_REGISTERED,
    NODECLAIM_INITIALIZED,
)

# Launched
REASON_LAUNCH_FAILED: Final = "LaunchFailed"
# Registered / Initialized
REASON_NODE_NOT_FOUND: Final = "NodeNotFound"
REASON_MULTIPLE_NODES_FOUND: Final = "MultipleNodesFound"
REASON_REGISTRATION_HOOK_PENDING: Final = "RegistrationHookPending"
REASON_NODE_NOT_READY: Final = "NodeNotReady"
REASON_STARTUP_TAINTS_EXIST: Final = "StartupTaintsExist"
REASON_KNOWN_EPHEMERAL_TAINTS_EXIST: Final = "KnownEphemeralTaintsExist"
REASON_RESOURCE_NOT_REGISTERED: Final = "ResourceNotRegistered"
REASON_DRA_DRIVER_POOLS_NOT_PUBLISHED: Final = "DRADriverPoolsNotPublished"
# Drifted
REASON_NODEPOOL_DRIFTED: Final = "NodePoolDrifted"
REASON_REQUIREMENTS_DRIFTED: Final = "RequirementsDrifted"
REASON_INSTANCE_TYPE_NOT_FOUND: Final = "InstanceTypeNotFound"
REASON_NODECLASS_DRIFT: Final = "NodeClassDrift"
# ConsistentStateFound
REASON_CONSISTENCY_CHECK_FAILED: Final = "ConsistencyCheckFailed"

# --- disruption reasons (budgets' `reasons`, the DisruptionReason condition, metrics) -------
DISRUPTION_REASON_UNDERUTILIZED: Final = "Underutilized"
DISRUPTION_REASON_EMPTY: Final = "Empty"
DISRUPTION_REASON_DRIFTED: Final = "Drifted"
DISRUPTION_REASONS: Final = (
    DISRUPTION_REASON_UNDERUTILIZED,
    DISRUPTION_REASON_EMPTY,
    DISRUPTION_REASON_DRIFTED,
)

# --- NodeClasses (every provider's NodeClass has a root Ready condition) -------------------
NODECLASS_READY: Final = CONDITION_READY
