"""Provisioning metrics, with Karpenter's names and labels."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from karpy.kube.metrics import REGISTRY

__all__ = [
    "IGNORED_PODS",
    "NODECLAIMS_CREATED",
    "OPTIMALITY_GAP",
    "PLAN_COST",
    "PLAN_LOWER_BOUND",
    "QUEUE_DEPTH",
    "SCHEDULING_DURATION",
    "UNFINISHED_WORK",
    "UNSCHEDULABLE_PODS",
]

NODECLAIMS_CREATED = Counter(
    "karpenter_nodeclaims_created_total",
    "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was "
    "created, the owning nodepool, and if min values was relaxed for this nodeclaim.",
    ["reason", "nodepool", "min_values_relaxed"],
    registry=REGISTRY,
)
SCHEDULING_DURATION = Histogram(
    "karpenter_scheduler_scheduling_duration_seconds",
    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
    ["controller"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120),
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "karpenter_scheduler_queue_depth",
    "The number of pods currently waiting to be scheduled.",
    ["controller", "scheduling_id"],
    registry=REGISTRY,
)
UNFINISHED_WORK = Gauge(
    "karpenter_scheduler_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "scheduling_duration_seconds.",
    ["controller", "scheduling_id"],
    registry=REGISTRY,
)
UNSCHEDULABLE_PODS = Gauge(
    "karpenter_scheduler_unschedulable_pods_count",
    "The number of unschedulable Pods.",
    ["controller"],
    registry=REGISTRY,
)
# Registered with no labels, so present (at 0) from start-up, as Karpenter's.
IGNORED_PODS = Gauge(
    "karpenter_scheduler_ignored_pods_count",
    "Number of pods ignored during scheduling by Karpenter",
    registry=REGISTRY,
)
# karpy's own: how far each small batch's plan may be from the cheapest (0 when proven optimal).
OPTIMALITY_GAP = Histogram(
    "karpy_scheduler_optimality_gap_ratio",
    "Gap between a provisioning plan's cost and the best lower bound the exact planner proved, "
    "as a fraction of the cost, per batch small enough for the exact planner.",
    buckets=(0.0, 0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
    registry=REGISTRY,
)
PLAN_COST = Gauge(
    "karpy_scheduler_plan_cost",
    "Hourly price of the NodeClaims the latest provisioning plan launches, at the offerings it "
    "chose (0 when it launches none).",
    registry=REGISTRY,
)
PLAN_LOWER_BOUND = Gauge(
    "karpy_scheduler_plan_lower_bound",
    "The best lower bound on the hourly price of any plan for the latest provisioning batch "
    "(equal to karpy_scheduler_plan_cost when the plan is proven cheapest).",
    registry=REGISTRY,
)
