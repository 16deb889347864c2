"""`karpenter.sh/v1` NodePool: the template of the nodes karpy may launch, their limits and how
they may be disrupted. Fields, defaults and validation rules match Karpenter's CRD.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1 import labels
from karpy.apis.v1.common import (
    LABEL_MAP_RULES,
    NODECLASS_REF_GROUP_IMMUTABLE,
    NODECLASS_REF_KIND_IMMUTABLE,
    REQUIREMENTS_RULES,
    Condition,
    Duration,
    Int32,
    Int64,
    LabelValue,
    NillableDuration,
    NodeClassReference,
    NodePoolRequirement,
    ObjectMeta,
    ResourceList,
    Taint,
    Time,
    duration_of,
    nillable_duration_of,
)

API_VERSION: Final = "karpenter.sh/v1"
KIND: Final = "NodePool"

BUDGET_NODES_PATTERN: Final = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_SCHEDULE_PATTERN: Final = (
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)
BUDGET_DURATION_PATTERN: Final = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
# An inactive budget, or one allowing everything, allows "unbounded" disruptions.
UNBOUNDED: Final = 2**31 - 1
WINDOW_HORIZON: Final = 200
"""How many overlapping cron hits `Budget.window` follows before it calls a window open."""

ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]


class TemplateMetadata(K8sModel):
    """Labels and annotations given to every NodeClaim (and so every Node) of the NodePool."""

    labels: (
        Annotated[dict[str, LabelValue], Schema(max_properties=100, rules=LABEL_MAP_RULES)] | None
    ) = None
    """Labels applied to the nodes; keys in karpenter.sh and kubernetes.io/hostname are
    restricted."""
    annotations: dict[str, str] | None = None
    """Annotations applied to the nodes."""


class NodeClaimTemplateSpec(K8sModel):
    """The desired state of the NodeClaims launched from a NodePool (without resource requests)."""

    taints: Annotated[list[Taint], Schema(list_type="atomic")] | None = None
    """Taints applied to the nodes."""
    startup_taints: Annotated[list[Taint], Schema(list_type="atomic")] | None = None
    """Taints applied at startup and expected to be removed by a daemon; pods need not
    tolerate them to be provisioned for."""
    requirements: Annotated[
        list[NodePoolRequirement],
        Schema(max_items=100, list_type="atomic", rules=REQUIREMENTS_RULES),
    ]
    """Node selector requirements every launched node satisfies."""
    node_class_ref: Annotated[
        NodeClassReference,
        Schema(rules=(NODECLASS_REF_GROUP_IMMUTABLE, NODECLASS_REF_KIND_IMMUTABLE)),
    ]
    """The provider NodeClass that configures the nodes."""
    termination_grace_period: Duration | None = None
    """How long a node may take to drain before its pods are deleted; unset waits forever."""
    expire_after: NillableDuration = "720h"
    """Lifetime of a node from its creation, after which it is replaced; `Never` disables."""

    def expire_after_duration(self) -> timedelta | None:
        """`expireAfter` as a timedelta; None means `Never`."""
        return nillable_duration_of(self.expire_after)

    def termination_grace_period_duration(self) -> timedelta | None:
        return duration_of(self.termination_grace_period)


class NodeClaimTemplate(K8sModel):
    """The template of the NodeClaims a NodePool launches."""

    metadata: TemplateMetadata | None = None
    spec: NodeClaimTemplateSpec


class Budget(K8sModel):
    """How many of a NodePool's nodes may be disrupted at once, optionally only on a schedule."""

    reasons: Annotated[list[DisruptionReason], Schema(max_items=50, list_type="set")] | None = None
    """The disruption reasons this budget limits; unset limits all of them."""
    nodes: Annotated[str, Schema(pattern=BUDGET_NODES_PATTERN)] = "10%"
    """The number (`5`) or percentage (`10%`) of nodes that may be disrupting at once."""
    schedule: Annotated[str, Schema(pattern=BUDGET_SCHEDULE_PATTERN)] | None = None
    """A cron schedule (UTC) at which the budget becomes active; requires duration."""
    duration: Annotated[str, Schema(pattern=BUDGET_DURATION_PATTERN)] | None = None
    """How long the budget stays active after each schedule hit; requires schedule."""

    def is_active(self, now: datetime) -> bool:
        """Whether the budget applies at `now`: always without a schedule, else within
        `duration` after a schedule hit (walking back so an earlier hit still counts)."""
        if self.schedule is None and self.duration is None:
            return True
        if self.schedule is None or self.duration is None:
            raise ValueError("a budget's schedule and duration must be set together")
        # only scheduled budgets need croniter: `karpy simulate` and most starts never load it
        from croniter import croniter  # type: ignore[import-untyped]

        current = now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC)
        window = duration_of(self.duration) or timedelta(0)
        next_hit: datetime = croniter(self.schedule, current - window).get_next(datetime)
        return next_hit <= current

    def window(self, now: datetime) -> tuple[datetime, datetime | None] | None:
        """The cron window that holds `now`, or else the next one: when it opens and when it
        closes (None when hits keep overlapping past `WINDOW_HORIZON` hits: it stays open).
        None for a budget without a schedule (always active). Raises ValueError or KeyError
        for a schedule croniter cannot read."""
        if self.schedule is None or self.duration is None:
            return None
        from croniter import croniter

        current = now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC)
        length = duration_of(self.duration) or timedelta(0)
        # the first hit after `now - duration`: at or before `now` it opened the window that
        # holds `now`; after it, there is no such window and it opens the next one
        hits = croniter(self.schedule, current - length)
        opens: datetime = hits.get_next(datetime)
        closes = opens + length
        for _ in range(WINDOW_HORIZON):
            following: datetime = hits.get_next(datetime)
            if following > closes:
                return opens, closes
            closes = following + length  # the next hit starts before this window closes
        return opens, None

    def allowed_disruptions(self, now: datetime, num_nodes: int) -> int:
        """Nodes this budget allows disrupting now (percentages round up); UNBOUNDED when
        inactive. A malformed schedule fails closed (0)."""
        try:
            active = self.is_active(now)
        except (ValueError, KeyError):
            return 0
        if not active:
            return UNBOUNDED
        if self.nodes.endswith("%"):
            return math.ceil(int(self.nodes[:-1]) * num_nodes / 100)
        return int(self.nodes)


class Disruption(K8sModel):
    """When and how karpy may disrupt the NodePool's nodes."""

    consolidate_after: NillableDuration
    """How long a node must go without pod changes before consolidation may act on it;
    `Never` disables consolidation."""
    consolidation_policy: ConsolidationPolicy = "WhenEmptyOrUnderutilized"
    """Which nodes consolidation may act on: WhenEmpty, WhenEmptyOrUnderutilized or Balanced."""
    budgets: Annotated[
        list[Budget],
        Schema(
            max_items=50,
            list_type="atomic",
            rules=(
                Rule(
                    "self.all(x, has(x.schedule) == has(x.duration))",
                    "'schedule' must be set with 'duration'",
                ),
            ),
        ),
    ] = Field(default_factory=lambda: [Budget()])
    """Disruption budgets; the most restrictive active budget wins."""

    def consolidate_after_duration(self) -> timedelta | None:
        """`consolidateAfter` as a timedelta; None means `Never`."""
        return nillable_duration_of(self.consolidate_after)


class NodePoolSpec(K8sModel):
    """A NodePool: what nodes to launch for unschedulable pods, and how to retire them."""

    k8s_rules = (
        Rule(
            "has(self.replicas) == has(oldSelf.replicas)",
            "Cannot transition NodePool between static (replicas set) and dynamic (replicas "
            "unset) provisioning modes",
        ),
        Rule(
            "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
            "(size(self.limits) == 1 && 'nodes' in self.limits))",
            "only 'limits.nodes' is supported on static NodePools",
        ),
        Rule(
            "!has(self.replicas) || !has(self.weight)",
            "'weight' is not supported on static NodePools",
        ),
    )

    template: NodeClaimTemplate
    """The template of the NodeClaims this NodePool launches."""
    disruption: Annotated[Disruption, Schema(default={"consolidateAfter": "0s"})] = Field(
        default_factory=lambda: Disruption(consolidate_after="0s")
    )
    """Disruption settings."""
    limits: ResourceList | None = None
    """Upper bounds on the capacity the NodePool may provision (cpu, memory, nodes, ...)."""
    weight: Annotated[Int32, Schema(minimum=1, maximum=100)] | None = None
    """Priority among NodePools; higher is tried first, unset counts as 0."""
    replicas: Annotated[Int64, Schema(minimum=0)] | None = None
    """A fixed number of nodes (static NodePool, alpha)."""


class BudgetStatus(K8sModel):
    """karpy only: what a NodePool's budgets allow for one disruption reason now."""

    reason: DisruptionReason
    """The disruption reason."""
    allowed: Int64
    """How many of the NodePool's nodes may be disrupting for the reason now (the tightest
    active budget; at most the node count)."""
    disrupting: Int64
    """How many of its nodes are disrupting now (being deleted or not Ready)."""
    next_change_at: Time | None = None
    """When a budget's cron window next opens or closes and changes `allowed`."""
    allowed_after_change: Int64 | None = None
    """What the budgets allow from `nextChangeAt` on (for the same node count)."""


class NodePoolDisruptionStatus(K8sModel):
    """karpy only: the NodePool's disruption budgets as they stand."""

    budgets: Annotated[list[BudgetStatus], Schema(max_items=3)] | None = None
    """Per disruption reason: allowed disruptions and when a cron window changes them."""


class NodePoolStatus(K8sModel):
    """The observed state of a NodePool."""

    resources: ResourceList | None = None
    """The capacity provisioned by the NodePool, including `nodes`."""
    nodes: Int64 = 0
    """The number of nodes of the NodePool."""
    node_class_observed_generation: Int64 | None = None
    """The NodeClass generation last seen by the readiness controller."""
    conditions: list[Condition] | None = None
    """ValidationSucceeded, NodeClassReady, NodeRegistrationHealthy and Ready."""
    disruption: NodePoolDisruptionStatus | None = None
    """karpy only: per disruption reason, what the budgets allow now and when that changes
    (written by the `nodepool.budgets` controller)."""
    cost: str | None = None
    """karpy only: the summed hourly price of the NodePool's launched NodeClaims' offerings,
    NodeOverlay prices included (as `karpenter_nodepools_cost_total`), as a decimal string
    (API conventions avoid floats). Units are the cloud provider's; not a source for billing."""


class NodePool(K8sModel):
    """NodePool is the Schema for the NodePools API."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodePoolSpec
    status: NodePoolStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def is_static(self) -> bool:
        return self.spec.replicas is not None

    def budgets_for(self, reason: str) -> list[Budget]:
        """The budgets that limit a disruption reason (those without `reasons` limit all)."""
        return [b for b in self.spec.disruption.budgets if b.reasons is None or reason in b.reasons]

    def allowed_disruptions(self, *, now: datetime, num_nodes: int, reason: str) -> int:
        """How many of `num_nodes` nodes may be disrupting for `reason` at `now`: the minimum
        over the matching budgets; UNBOUNDED when none is active."""
        allowed = UNBOUNDED
        for budget in self.budgets_for(reason):
            allowed = min(allowed, budget.allowed_disruptions(now, num_nodes))
        return allowed

    def nodeclass_label(self) -> tuple[str, str]:
        """The label identifying this NodePool's NodeClass on its nodes."""
        return self.spec.template.spec.node_class_ref.label()

    def nodepool_label(self) -> tuple[str, str]:
        return labels.LABEL_NODEPOOL, self.name


NODEPOOL = CustomResource(
    model=NodePool,
    group=labels.GROUP,
    version="v1",
    kind=KIND,
    plural="nodepools",
    singular="nodepool",
    printer_columns=(
        PrinterColumn("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        PrinterColumn("Nodes", ".status.nodes"),
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("Weight", ".spec.weight", "integer", priority=1),
        PrinterColumn("CPU", ".status.resources.cpu", priority=1),
        PrinterColumn("Memory", ".status.resources.memory", priority=1),
        PrinterColumn("Cost", ".status.cost", priority=1),
    ),
    scale=(".spec.replicas", ".status.nodes"),
)


def validate_nodepool(obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> NodePool:
    """Admit a NodePool manifest as the apiserver would (defaults, schema, CEL) and return it.

    Raises `karpy.apis.ValidationError` naming each offending field path. Pass the stored
    object as `old` to check an update (immutable fields and other transition rules).
    """
    return NODEPOOL.validate(obj, old=old)
