"""Disruption metrics, with Karpenter's names and labels (reasons in lower case)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from karpy.controllers.metrics.upstream import DURATION_BUCKETS
from karpy.kube.metrics import REGISTRY

__all__ = [
    "ALLOWED_DISRUPTIONS",
    "BLOCKED_NODES",
    "CONSUMING_BUDGETS",
    "DECISIONS_BY_NODEPOOL_TOTAL",
    "DECISIONS_TOTAL",
    "ELIGIBLE_NODES",
    "EVALUATION_DURATION",
    "FAILED_VALIDATIONS_TOTAL",
    "QUEUE_FAILURES_TOTAL",
    "SAVINGS_TOTAL",
]

DECISIONS_TOTAL = Counter(
    "karpenter_voluntary_disruption_decisions_total",
    "Number of disruption decisions performed. Labeled by disruption decision, reason, and "
    "consolidation type.",
    ["decision", "reason", "consolidation_type"],
    registry=REGISTRY,
)
ALLOWED_DISRUPTIONS = Gauge(
    "karpenter_nodepools_allowed_disruptions",
    "The number of nodes for a given NodePool that can be concurrently disrupting at a point in "
    "time. Labeled by NodePool. Note that allowed disruptions can change very rapidly, as new "
    "nodes may be created and others may be deleted at any point.",
    ["nodepool", "reason"],
    registry=REGISTRY,
)
ELIGIBLE_NODES = Gauge(
    "karpenter_voluntary_disruption_eligible_nodes",
    "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
    ["reason"],
    registry=REGISTRY,
)
FAILED_VALIDATIONS_TOTAL = Counter(
    "karpenter_voluntary_disruption_failed_validations_total",
    "Number of candidates that were selected for disruption but failed validation. Labeled by "
    "consolidation type.",
    ["consolidation_type"],
    registry=REGISTRY,
)
QUEUE_FAILURES_TOTAL = Counter(
    "karpenter_voluntary_disruption_queue_failures_total",
    "Number of times commands to disrupt nodes have failed. Labeled by decision, reason and "
    "consolidation type.",
    ["decision", "reason", "consolidation_type"],
    registry=REGISTRY,
)
DECISIONS_BY_NODEPOOL_TOTAL = Counter(
    "karpenter_voluntary_disruption_decisions_by_nodepool_total",
    "Number of disruption decisions performed by nodepool. Labeled by nodepool name, disruption "
    "decision, reason, and consolidation type.",
    ["nodepool", "decision", "reason", "consolidation_type"],
    registry=REGISTRY,
)
EVALUATION_DURATION = Histogram(
    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
    "Duration of the disruption decision evaluation process in seconds. Labeled by method and "
    "consolidation type.",
    # Karpenter's help says "method"; its label is the method's reason (lower case)
    ["reason", "consolidation_type"],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
CONSUMING_BUDGETS = Gauge(
    "karpenter_nodepools_nodes_consuming_budgets",
    "The number of nodes consuming the budget of a nodepool at a point in time. Labeled by "
    "NodePool.",
    ["nodepool", "reason"],
    registry=REGISTRY,
)
BLOCKED_NODES = Gauge(
    "karpy_disruption_blocked_nodes",
    "Nodes a disruption method may not take now, by NodePool, method (emptiness, drift, "
    "consolidation) and the blocker's reason in karpy's bounded taxonomy (do-not-disrupt, pdb, "
    "budget, consolidate-after, not-initialized, nominated, no-cheaper-replacement, "
    "spot-to-spot, min-values, static-nodepool); `karpy explain node` names each one.",
    ["nodepool", "method", "reason"],
    registry=REGISTRY,
)
# karpy's own: what consolidation saves, so a dashboard can show savings over time.
SAVINGS_TOTAL = Counter(
    "karpy_disruption_savings_total",
    "Hourly price removed by started consolidation commands (the candidates' price minus their "
    "replacements'), in the catalogue's currency per hour, by reason and consolidation type. "
    "Commands whose saving is not priced (emptiness, drift) add nothing.",
    ["reason", "consolidation_type"],
    registry=REGISTRY,
)
