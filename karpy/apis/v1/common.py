"""Types shared by the karpenter.sh kinds (and reused by the NodeClass kinds).

Patterns and bounds are Karpenter's own, so a manifest is accepted here exactly when Karpenter's
CRDs accept it. Quantities stay strings (`"4Gi"`); `karpy.scheduling` parses them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, PlainSerializer, ValidatorFunctionWrapHandler, WrapValidator

from karpy.apis.duration import parse_duration, parse_nillable_duration
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1 import labels

# --- patterns ------------------------------------------------------------------------------
QUALIFIED_NAME_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE_PATTERN: Final = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DURATION_PATTERN: Final = r"^([0-9]+(s|m|h))+$"
DURATION_OR_NEVER_PATTERN: Final = r"^(([0-9]+(s|m|h))+|Never)$"
CONDITION_TYPE_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN: Final = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
# NodeClaims may carry an empty reason (Karpenter relaxes the upstream pattern for them).
NODECLAIM_CONDITION_REASON_PATTERN: Final = r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$"


class IntQuantity(str):
    """A quantity written as a JSON integer (`cpu: 1000`).

    It is the string `"1000"` to every reader, and serializes back as the integer, so objects
    read from the apiserver round-trip byte for byte.
    """

    __slots__ = ()


def _quantity_in(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return IntQuantity(value)
    return handler(value)


def _quantity_out(value: str) -> int | str:
    return int(value) if type(value) is IntQuantity else str(value)


# --- scalar types --------------------------------------------------------------------------
Quantity = Annotated[
    str,
    WrapValidator(_quantity_in),
    PlainSerializer(_quantity_out),
    Schema(int_or_string=True, pattern=QUANTITY_PATTERN),
]
"""A resource quantity (`"100m"`, `"4Gi"`, `1000`), kept as a string; parse it in scheduling."""
ResourceList = dict[str, Quantity]
Int32 = Annotated[int, Schema(format="int32")]
Int64 = Annotated[int, Schema(format="int64")]
Duration = Annotated[str, Schema(pattern=DURATION_PATTERN)]
"""A Go duration limited to hours, minutes and seconds (`1h30m`)."""
NillableDuration = Annotated[str, Schema(pattern=DURATION_OR_NEVER_PATTERN)]
"""A duration or `Never`."""
LabelValue = Annotated[str, Schema(max_length=63, pattern=LABEL_VALUE_PATTERN)]
Time = Annotated[datetime, Schema(format="date-time")]


def duration_of(text: str | None) -> timedelta | None:
    """A duration field's value as a timedelta; None when unset."""
    return None if text is None else parse_duration(text)


def nillable_duration_of(text: str | None) -> timedelta | None:
    """A `Never`-able duration as a timedelta; None means unset or `Never` (no limit)."""
    return None if text is None else parse_nillable_duration(text)


# --- metadata ------------------------------------------------------------------------------
class OwnerReference(K8sModel):
    """A reference to an owning object."""

    model_config = ConfigDict(extra="allow")

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sModel):
    """Standard object metadata; fields karpy does not model are kept as they are."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[OwnerReference] | None = None


# --- status conditions ---------------------------------------------------------------------
ConditionStatus = Literal["True", "False", "Unknown"]


class _ConditionBase(K8sModel):
    type: Annotated[str, Schema(pattern=CONDITION_TYPE_PATTERN, max_length=316)]
    """Type of condition in CamelCase or in foo.example.com/CamelCase."""
    status: ConditionStatus
    """Status of the condition, one of True, False, Unknown."""
    observed_generation: Annotated[Int64, Schema(minimum=0)] | None = None
    """The .metadata.generation that the condition was set based upon."""
    last_transition_time: Time
    """The last time the condition transitioned from one status to another."""

    @property
    def is_true(self) -> bool:
        return self.status == "True"


class Condition(_ConditionBase):
    """A status condition (NodePools and NodeClasses): reason and message are required."""

    reason: Annotated[str, Schema(pattern=CONDITION_REASON_PATTERN, min_length=1, max_length=1024)]
    """A programmatic CamelCase identifier for the condition's last transition."""
    message: Annotated[str, Schema(max_length=32768)]
    """A human readable message about the transition; may be empty."""


class NodeClaimCondition(_ConditionBase):
    """A NodeClaim status condition; unlike other kinds its reason and message may be omitted."""

    reason: (
        Annotated[str, Schema(pattern=NODECLAIM_CONDITION_REASON_PATTERN, max_length=1024)] | None
    ) = None
    """A programmatic CamelCase identifier for the condition's last transition; may be empty."""
    message: Annotated[str, Schema(max_length=32768)] | None = None
    """A human readable message about the transition."""


def find_condition(conditions: list[Any] | None, type_: str) -> Any | None:
    """The condition of a type, if present (works on models and raw dicts alike)."""
    for condition in conditions or []:
        current = condition.get("type") if isinstance(condition, dict) else condition.type
        if current == type_:
            return condition
    return None


# --- taints --------------------------------------------------------------------------------
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(K8sModel):
    """The node this Taint is attached to has the "effect" on any pod that does not tolerate the
    Taint."""

    key: Annotated[str, Schema(min_length=1, pattern=QUALIFIED_NAME_PATTERN)]
    """The taint key to be applied to a node."""
    value: Annotated[str, Schema(pattern=QUALIFIED_NAME_PATTERN)] | None = None
    """The taint value corresponding to the taint key."""
    effect: TaintEffect
    """The effect of the taint on pods that do not tolerate the taint."""
    time_added: Time | None = None
    """The time at which the taint was added (NoExecute taints only)."""


# --- requirements --------------------------------------------------------------------------
Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
OPERATORS: Final[tuple[str, ...]] = (
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "Gt",
    "Lt",
    "Gte",
    "Lte",
)
NUMERIC_OPERATORS: Final[tuple[str, ...]] = ("Gt", "Lt", "Gte", "Lte")


def _outside_domain(key: str, domain: str, allowed: tuple[str, ...]) -> str:
    """CEL: the label key held by `key` is outside `domain` (and subdomains), or allowed."""
    listed = ", ".join(f'"{k}"' for k in allowed)
    return f'{key} in [{listed}] || !{key}.find("^([^/]+)").endsWith("{domain}")'


def label_key_rules(key: str) -> tuple[Rule, Rule, Rule]:
    """Karpenter's restricted-label rules on a label key held by the CEL variable `key`:
    karpenter.sh keys other than capacity-type and nodepool, karpenter.sh/nodepool itself, and
    kubernetes.io/hostname."""
    return (
        Rule(
            _outside_domain(key, labels.GROUP, (labels.LABEL_CAPACITY_TYPE, labels.LABEL_NODEPOOL)),
            f'label domain "{labels.GROUP}" is restricted',
        ),
        Rule(
            f'{key} != "{labels.LABEL_NODEPOOL}"', f'label "{labels.LABEL_NODEPOOL}" is restricted'
        ),
        Rule(
            f'{key} != "{labels.LABEL_HOSTNAME}"', f'label "{labels.LABEL_HOSTNAME}" is restricted'
        ),
    )


KARPENTER_DOMAIN_RULE, NODEPOOL_LABEL_RULE, HOSTNAME_LABEL_RULE = label_key_rules("self")
# The same rules over every key of a labels map.
LABEL_MAP_RULES: Final = tuple(
    Rule(f"self.all(x, {r.rule})", r.message) for r in label_key_rules("x")
)


REQUIREMENTS_RULES: Final = (
    Rule(
        "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
        "requirements with operator 'In' must have a value defined",
    ),
    Rule(
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || "
        "x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive "
        "integer value",
    ),
    Rule(
        "self.all(x, (x.operator == 'In' && has(x.minValues)) ? "
        "x.values.size() >= x.minValues : true)",
        "requirements with 'minValues' must have at least that many values specified in the "
        "'values' field",
    ),
)


class NodeSelectorRequirement(K8sModel):
    """A selector that contains values, a key, and an operator that relates the key and values."""

    key: str
    """The label key that the selector applies to."""
    operator: str
    """A key's relationship to a set of values: In, NotIn, Exists, DoesNotExist, Gt, Lt."""
    values: list[str] | None = None
    """The values; one integer for Gt and Lt, none for Exists and DoesNotExist."""


NodeClaimRequirementKey = Annotated[
    str,
    Schema(
        max_length=316,
        pattern=QUALIFIED_NAME_PATTERN,
        rules=(KARPENTER_DOMAIN_RULE, HOSTNAME_LABEL_RULE),
    ),
]
NodePoolRequirementKey = Annotated[
    str,
    Schema(
        max_length=316,
        pattern=QUALIFIED_NAME_PATTERN,
        rules=(KARPENTER_DOMAIN_RULE, NODEPOOL_LABEL_RULE, HOSTNAME_LABEL_RULE),
    ),
]


class _RequirementBase(K8sModel):
    key: str
    """The label key that the selector applies to."""
    operator: Operator
    """A key's relationship to a set of values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte,
    Lte."""
    values: Annotated[list[LabelValue], Schema(list_type="atomic")] | None = None
    """The values. In and NotIn need at least one; Gt, Lt, Gte and Lte exactly one integer;
    Exists and DoesNotExist none."""
    min_values: Annotated[int, Schema(minimum=1, maximum=50)] | None = None
    """The minimum number of unique values the requirement must keep (flexibility); alpha."""

    @property
    def value_set(self) -> frozenset[str]:
        return frozenset(self.values or ())


class NodeClaimRequirement(_RequirementBase):
    """A node selector requirement with an optional minimum number of values (NodeClaims)."""

    key: NodeClaimRequirementKey
    """The label key that the selector applies to."""


class NodePoolRequirement(_RequirementBase):
    """A node selector requirement with an optional minimum number of values (NodePools)."""

    key: NodePoolRequirementKey
    """The label key that the selector applies to."""


# --- node class reference ------------------------------------------------------------------
NODECLASS_REF_GROUP_OR_API_VERSION: Final = Rule(
    "has(self.group) || has(self.apiVersion)",
    "nodeClassRef must set 'group' (or the legacy 'apiVersion')",
)
NODECLASS_REF_CONSISTENT: Final = Rule(
    "!has(self.group) || !has(self.apiVersion) || self.apiVersion.split('/')[0] == self.group",
    "nodeClassRef.apiVersion must be in nodeClassRef.group",
)
_GROUP_OF_SELF = "(has(self.group) ? self.group : self.apiVersion.split('/')[0])"
_GROUP_OF_OLD = "(has(oldSelf.group) ? oldSelf.group : oldSelf.apiVersion.split('/')[0])"
NODECLASS_REF_GROUP_IMMUTABLE: Final = Rule(
    f"{_GROUP_OF_SELF} == {_GROUP_OF_OLD}", "nodeClassRef.group is immutable"
)
NODECLASS_REF_KIND_IMMUTABLE: Final = Rule(
    "self.kind == oldSelf.kind", "nodeClassRef.kind is immutable"
)


class NodeClassReference(K8sModel):
    """A reference to the provider-specific NodeClass object.

    karpy accepts `apiVersion: <group>/<version>` in place of `group` (the form older
    documentation shows); `group_name()` reads the group from either.
    """

    k8s_rules = (NODECLASS_REF_GROUP_OR_API_VERSION, NODECLASS_REF_CONSISTENT)

    kind: Annotated[str, Schema(rules=(Rule("self != ''", "kind may not be empty"),))]
    """Kind of the referent."""
    name: Annotated[str, Schema(rules=(Rule("self != ''", "name may not be empty"),))]
    """Name of the referent."""
    group: (
        Annotated[
            str,
            Schema(pattern=r"^[^/]*$", rules=(Rule("self != ''", "group may not be empty"),)),
        ]
        | None
    ) = None
    """API group of the referent."""
    api_version: (
        Annotated[
            str,
            Schema(
                max_length=253,
                pattern=r"^[^/]+/[^/]+$",
                rules=(Rule("self != ''", "apiVersion may not be empty"),),
            ),
        ]
        | None
    ) = None
    """Legacy form: the referent's API version (`group/version`); read as the group."""

    def group_name(self) -> str:
        """The referent's API group, from `group` or else from the legacy `apiVersion`."""
        return group_of_ref(self.to_dict())

    def label(self) -> tuple[str, str]:
        """The NodeClass label Karpenter puts on NodeClaims and Nodes: (`<group>/<kind>`, name)."""
        return labels.nodeclass_label_key(self.group_name(), self.kind), self.name


def group_of_ref(ref: dict[str, Any]) -> str:
    """The API group of a raw nodeClassRef dict (`group`, else `apiVersion`'s group part)."""
    group = ref.get("group")
    if group:
        return str(group)
    api_version = ref.get("apiVersion") or ""
    return str(api_version).split("/", 1)[0] if "/" in str(api_version) else ""
