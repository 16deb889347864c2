"""`karpenter.sh/v1alpha1` NodeOverlay: adjustments to the instance types the scheduler sees.

An overlay's `requirements` select instance types (and, through zone and capacity-type keys,
their offerings) per NodePool; the selected offerings get `price` or `priceAdjustment` (an
absolute `±N` or a relative `+N%`/`-N%`), the selected types get the extended resources in
`capacity`. Overlays apply highest `weight` first; of two with the same weight touching the
same offering price or the same resource, the one applied second conflicts: it is ignored as a
whole and its `ValidationSucceeded` condition says so (Karpenter's NodeOverlay controller).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1 import labels
from karpy.apis.v1.common import Condition, Int32, ObjectMeta, ResourceList

__all__ = [
    "ANNOTATION_CAPACITY_OVERLAY_APPLIED",
    "ANNOTATION_PRICE_OVERLAY_APPLIED",
    "API_VERSION",
    "KIND",
    "NODEOVERLAY",
    "RESTRICTED_CAPACITY",
    "NodeOverlay",
    "NodeOverlayRequirement",
    "NodeOverlaySpec",
    "NodeOverlayStatus",
    "validate_nodeoverlay",
]

VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{labels.GROUP}/{VERSION}"
KIND: Final = "NodeOverlay"
ANNOTATION_PRICE_OVERLAY_APPLIED: Final = f"{labels.GROUP}/price-overlay-applied"
"""On a NodeClaim: some of its instance types' offerings were priced by an overlay."""
ANNOTATION_CAPACITY_OVERLAY_APPLIED: Final = f"{labels.GROUP}/capacity-overlay-applied"
"""On a NodeClaim: some of its instance types carry capacity an overlay added."""
RESTRICTED_CAPACITY: Final = ("cpu", "memory", "ephemeral-storage", "pods")
"""Resources an overlay may not set: it adds extended resources only."""

PRICE_ADJUSTMENT_PATTERN: Final = (
    r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"
)
PRICE_PATTERN: Final = r"^\d+(\.\d+)?$"

_REQUIREMENT_RULES: Final = (
    Rule(
        "self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)",
        "requirements with operator 'NotIn' must have a value defined",
    ),
    Rule(
        "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
        "requirements with operator 'In' must have a value defined",
    ),
    Rule(
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || "
        "x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive "
        "integer value",
    ),
)
_CAPACITY_RULE: Final = Rule(
    "self.all(x, !(x in [" + ", ".join(f"'{r}'" for r in RESTRICTED_CAPACITY) + "]))",
    "invalid resource restricted",
)
_PRICE_EXCLUSIVE: Final = Rule(
    "!has(self.price) || !has(self.priceAdjustment)",
    "cannot set both 'price' and 'priceAdjustment'",
)


class NodeOverlayRequirement(K8sModel):
    """A selector on the labels of an instance type, its offerings and its NodePool."""

    key: str
    """The label key that the selector applies to (well-known labels, `karpenter.sh/nodepool`,
    or a label of the NodePool template)."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
    """A key's relationship to a set of values."""
    values: Annotated[list[str], Schema(list_type="atomic")] | None = None
    """The values: at least one for In and NotIn, one integer for Gt, Lt, Gte and Lte."""


class NodeOverlaySpec(K8sModel):
    """Which instance types the overlay adjusts, and how."""

    requirements: Annotated[
        list[NodeOverlayRequirement], Schema(max_items=100, rules=_REQUIREMENT_RULES)
    ]
    """Constrain where the overlay applies; every requirement must match the instance type
    (an offering is adjusted only when it matches too)."""
    price_adjustment: Annotated[str, Schema(pattern=PRICE_ADJUSTMENT_PATTERN)] | None = None
    """A change of the matching offerings' price: `+0.5`/`-0.5` (absolute) or `+10%`/`-15%`."""
    price: Annotated[str, Schema(pattern=PRICE_PATTERN)] | None = None
    """The price the matching offerings get instead of their own."""
    capacity: Annotated[ResourceList, Schema(rules=(_CAPACITY_RULE,))] | None = None
    """Extended resources added to the matching instance types (never cpu, memory,
    ephemeral-storage or pods)."""
    weight: Annotated[Int32, Schema(minimum=1, maximum=10000)] | None = None
    """Priority among overlapping overlays: higher applies first; none counts as 0."""


class NodeOverlayStatus(K8sModel):
    """The observed state of a NodeOverlay."""

    conditions: list[Condition] | None = None
    """ValidationSucceeded (false with reason Conflict or RuntimeValidation) and Ready."""


class NodeOverlay(K8sModel):
    """NodeOverlay is the Schema for the NodeOverlays API."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: Annotated[NodeOverlaySpec, Schema(rules=(_PRICE_EXCLUSIVE,))]
    status: NodeOverlayStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""


NODEOVERLAY = CustomResource(
    model=NodeOverlay,
    group=labels.GROUP,
    version=VERSION,
    kind=KIND,
    plural="nodeoverlays",
    singular="nodeoverlay",
    short_names=("overlays",),
    printer_columns=(
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("Weight", ".spec.weight", "integer", priority=1),
    ),
    # Karpenter's CRD charts before NodeOverlay lack it: the gate alone must not stall karpy.
    optional=True,
)


def validate_nodeoverlay(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> NodeOverlay:
    """Admit a NodeOverlay manifest as the apiserver would and return it; raises
    `karpy.apis.ValidationError` naming each offending field path."""
    return NODEOVERLAY.validate(obj, old=old)
