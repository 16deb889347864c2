"""The table of Karpenter v1.14.1's metrics: what a drop-in must export, and where it is defined.

One row per metric name Karpenter's core registers (and the AWS provider's, where karpy has the
feature): name, type, label names, histogram buckets, help text, the upstream file that defines
it, whether it is registered eagerly (present on `/metrics` from start-up), and, when karpy does
not export it, why. The metrics parity test and the generated metrics reference page read it, so
a metric added upstream is added here once and both notice.

Sources are paths in `kubernetes-sigs/karpenter` (core) or `aws/karpenter-provider-aws` (AWS).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, cast

__all__ = ["DURATION_BUCKETS", "KARPENTER_METRICS", "KARPENTER_VERSION", "KarpenterMetric"]

KARPENTER_VERSION: Final = "v1.14.1"

MetricType = Literal["counter", "gauge", "histogram", "summary"]

# Karpenter's `metrics.DurationBuckets()`: controller-runtime's thresholds plus long tails.
DURATION_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7),
    *(0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20),
    *(25, 30, 40, 50, 60, 120, 150, 300, 450, 600),
)

# Karpenter's batcher `SizeBuckets()`.
_BATCH_SIZE_BUCKETS: Final = (
    *(1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200),
    *(225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000),
)

# The node resource gauges carry one label per well-known node label (the key's name after
# the `/`, snake_case) besides these three; `NODE_WELL_KNOWN` lists those of core.
NODE_WELL_KNOWN: Final = (
    "nodepool",
    "capacity_type",
    "zone",
    "region",
    "instance_type",
    "arch",
    "os",
    "windows_build",
)
_NODE_RESOURCE_LABELS: Final = (*NODE_WELL_KNOWN, "resource_type", "node_name", "phase")

_CORE = "kubernetes-sigs/karpenter"
_AWS = "aws/karpenter-provider-aws"
_NODE_METRICS = f"{_CORE}: pkg/controllers/metrics/node/controller.go"
_POD_METRICS = f"{_CORE}: pkg/controllers/metrics/pod/controller.go"
_DISRUPTION = f"{_CORE}: pkg/controllers/disruption/metrics.go"
_SCHEDULER = f"{_CORE}: pkg/controllers/provisioning/scheduling/metrics.go"
_CORE_METRICS = f"{_CORE}: pkg/metrics/metrics.go"
_NODE_TERMINATION = f"{_CORE}: pkg/controllers/node/termination/metrics.go"
_TERMINATOR = f"{_CORE}: pkg/controllers/node/termination/terminator/metrics.go"
_NODECLAIM_TERMINATION = f"{_CORE}: pkg/controllers/nodeclaim/lifecycle/metrics.go"
_STATE = f"{_CORE}: pkg/controllers/state/metrics.go"
_CLOUDPROVIDER = f"{_CORE}: pkg/cloudprovider/metrics/cloudprovider.go"
_INTERRUPTION = f"{_AWS}: pkg/controllers/interruption/metrics.go"


@dataclass(frozen=True, slots=True)
class KarpenterMetric:
    """One upstream metric. `missing` is empty when karpy exports it, else the reason it does
    not."""

    name: str
    type: MetricType
    labels: tuple[str, ...]
    help: str
    source: str
    buckets: tuple[float, ...] | None = None
    eager: bool = False
    missing: str = ""


def _m(
    name: str,
    kind: MetricType,
    labels: tuple[str, ...],
    help_text: str,
    source: str,
    *,
    buckets: tuple[float, ...] | None = None,
    eager: bool = False,
    missing: str = "",
) -> KarpenterMetric:
    return KarpenterMetric(name, kind, labels, help_text, source, buckets, eager, missing)


_OPERATORPKG_STATUS = "awslabs/operatorpkg: status/controller.go, status/metrics.go"
# prometheus/client_golang's `DefBuckets`: operatorpkg's histograms set no buckets of their own.
_PROMETHEUS_DEF_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

KARPENTER_METRICS: Final[tuple[KarpenterMetric, ...]] = (
    _m(
        "karpenter_build_info",
        "gauge",
        ("version", "goversion", "goarch", "commit"),
        "A metric with a constant '1' value labeled by version from which karpenter was built.",
        f"{_CORE}: pkg/operator/operator.go",
        eager=True,
    ),
    # -- nodes (metrics.node, every 5 s, from cluster state) -----------------------------------
    *(
        _m(f"karpenter_nodes_{suffix}", "gauge", _NODE_RESOURCE_LABELS, text, _NODE_METRICS)
        for suffix, text in (
            ("allocatable", "Node allocatable are the resources allocatable by nodes."),
            (
                "total_pod_requests",
                "Node total pod requests are the resources requested by pods bound to nodes, "
                "including the DaemonSet pods.",
            ),
            (
                "total_pod_limits",
                "Node total pod limits are the resources specified by pod limits, including the "
                "DaemonSet pods.",
            ),
            (
                "total_daemon_requests",
                "Node total daemon requests are the resource requested by DaemonSet pods bound "
                "to nodes.",
            ),
            (
                "total_daemon_limits",
                "Node total daemon limits are the resources specified by DaemonSet pod limits.",
            ),
            (
                "system_overhead",
                "Node system daemon overhead are the resources reserved for system overhead, the "
                "difference between the node's capacity and allocatable values are reported by "
                "the status.",
            ),
        )
    ),
    _m(
        "karpenter_nodes_current_lifetime_seconds",
        "gauge",
        ("node_name", "nodepool"),
        "Node age in seconds",
        _NODE_METRICS,
    ),
    _m(
        "karpenter_cluster_utilization_percent",
        "gauge",
        ("resource_type",),
        "Utilization of allocatable resources by pod requests",
        _NODE_METRICS,
    ),
    _m(
        "karpenter_nodes_created_total",
        "counter",
        ("nodepool",),
        "Number of nodes created in total by Karpenter. Labeled by owning nodepool.",
        _CORE_METRICS,
    ),
    _m(
        "karpenter_nodes_terminated_total",
        "counter",
        ("nodepool", "zone"),
        "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
        _NODE_TERMINATION,
    ),
    _m(
        "karpenter_nodes_termination_duration_seconds",
        "summary",
        ("nodepool",),
        "The time taken between a node's deletion request and the removal of its finalizer",
        _NODE_TERMINATION,
    ),
    _m(
        "karpenter_nodes_lifetime_duration_seconds",
        "histogram",
        ("nodepool",),
        "The lifetime duration of the nodes since creation.",
        _NODE_TERMINATION,
    ),
    _m(
        "karpenter_nodes_drained_total",
        "counter",
        ("nodepool",),
        "The total number of nodes drained by Karpenter",
        _NODE_TERMINATION,
    ),
    _m(
        "karpenter_nodes_eviction_queue_depth",
        "gauge",
        (),
        "The number of pods currently waiting for a successful eviction in the eviction queue.",
        _TERMINATOR,
    ),
    _m(
        "karpenter_pods_eviction_requests_total",
        "counter",
        ("code",),
        "The total number of pod eviction requests made by Karpenter, labeled by response code",
        _TERMINATOR,
    ),
    _m(
        "karpenter_pods_drained_total",
        "counter",
        ("reason",),
        "The total number of pods drained during node termination by Karpenter, labeled by reason",
        _TERMINATOR,
    ),
    # -- nodeclaims ---------------------------------------------------------------------------
    _m(
        "karpenter_nodeclaims_created_total",
        "counter",
        ("reason", "nodepool", "min_values_relaxed"),
        "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was "
        "created, the owning nodepool, and if min values was relaxed for this nodeclaim.",
        _CORE_METRICS,
    ),
    _m(
        "karpenter_nodeclaims_terminated_total",
        "counter",
        ("nodepool", "capacity_type", "zone"),
        "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, "
        "capacity type, and zone.",
        _CORE_METRICS,
    ),
    _m(
        "karpenter_nodeclaims_disrupted_total",
        "counter",
        ("reason", "nodepool", "capacity_type"),
        "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim "
        "was disrupted and the owning nodepool.",
        _CORE_METRICS,
    ),
    _m(
        "karpenter_nodeclaims_unhealthy_disrupted_total",
        "counter",
        ("condition", "nodepool", "capacity_type", "image_id"),
        "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on "
        "the node was disrupted, the owning nodepool, and the image ID.",
        f"{_CORE}: pkg/controllers/node/health/metrics.go",
    ),
    _m(
        "karpenter_nodeclaims_termination_duration_seconds",
        "summary",
        ("nodepool",),
        "Duration of NodeClaim termination in seconds.",
        _NODECLAIM_TERMINATION,
    ),
    _m(
        "karpenter_nodeclaims_instance_termination_duration_seconds",
        "summary",
        ("nodepool",),
        "Duration of CloudProvider Instance termination in seconds.",
        _NODECLAIM_TERMINATION,
    ),
    # -- nodepools ----------------------------------------------------------------------------
    _m(
        "karpenter_nodepools_usage",
        "gauge",
        ("nodepool", "resource_type"),
        "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool "
        "name and resource type.",
        f"{_CORE}: pkg/controllers/metrics/nodepool/controller.go",
    ),
    _m(
        "karpenter_nodepools_limit",
        "gauge",
        ("nodepool", "resource_type"),
        "Limits specified on the nodepool that restrict the quantity of resources provisioned. "
        "Labeled by nodepool name and resource type.",
        f"{_CORE}: pkg/controllers/metrics/nodepool/controller.go",
    ),
    _m(
        "karpenter_nodepools_cost_total",
        "gauge",
        ("nodepool",),
        "ALPHA METRIC. Total cost of the nodepool from Karpenter's perspective. Units are "
        "determined by the cloud provider. Not an authoritative source for billing. Includes "
        "modifications due to NodeOverlays",
        f"{_CORE}: pkg/controllers/metrics/cluster/controller.go",
    ),
    _m(
        "karpenter_nodepools_allowed_disruptions",
        "gauge",
        ("nodepool", "reason"),
        "The number of nodes for a given NodePool that can be concurrently disrupting at a point "
        "in time. Labeled by NodePool. Note that allowed disruptions can change very rapidly, as "
        "new nodes may be created and others may be deleted at any point.",
        _DISRUPTION,
    ),
    _m(
        "karpenter_nodepools_nodes_consuming_budgets",
        "gauge",
        ("nodepool", "reason"),
        "The number of nodes consuming the budget of a nodepool at a point in time. Labeled by "
        "NodePool.",
        _DISRUPTION,
    ),
    # -- pods (metrics.pod) -------------------------------------------------------------------
    _m(
        "karpenter_pods_state",
        "gauge",
        (
            *("name", "namespace", "owner", "node", "nodepool", "zone", "arch"),
            *("capacity_type", "instance_type", "phase"),
        ),
        "Pod state is the current state of pods. This metric can be used several ways as it is "
        "labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, "
        "capacity type, instance type and pod phase.",
        _POD_METRICS,
    ),
    _m(
        "karpenter_pods_startup_duration_seconds",
        "summary",
        (),
        "The time from pod creation until the pod is running.",
        _POD_METRICS,
        eager=True,
    ),
    _m(
        "karpenter_pods_bound_duration_seconds",
        "histogram",
        (),
        "The time from pod creation until the pod is bound.",
        _POD_METRICS,
        buckets=DURATION_BUCKETS,
        eager=True,
    ),
    _m(
        "karpenter_pods_unbound_time_seconds",
        "gauge",
        ("name", "namespace"),
        "The time from pod creation until the pod is bound.",
        _POD_METRICS,
    ),
    _m(
        "karpenter_pods_unstarted_time_seconds",
        "gauge",
        ("name", "namespace"),
        "The time from pod creation until the pod is running.",
        _POD_METRICS,
    ),
    _m(
        "karpenter_pods_provisioning_bound_duration_seconds",
        "histogram",
        (),
        "The time from when Karpenter first thinks the pod can schedule until it binds. Note: "
        "this calculated from a point in memory, not by the pod creation timestamp.",
        _POD_METRICS,
        buckets=DURATION_BUCKETS,
        eager=True,
    ),
    _m(
        "karpenter_pods_provisioning_startup_duration_seconds",
        "histogram",
        (),
        "The time from when Karpenter first thinks the pod can schedule until the pod is "
        "running. Note: this calculated from a point in memory, not by the pod creation "
        "timestamp.",
        _POD_METRICS,
        buckets=DURATION_BUCKETS,
        eager=True,
    ),
    _m(
        "karpenter_pods_provisioning_unbound_time_seconds",
        "gauge",
        ("name", "namespace"),
        "The time from when Karpenter first thinks the pod can schedule until it binds. Note: "
        "this calculated from a point in memory, not by the pod creation timestamp.",
        _POD_METRICS,
    ),
    _m(
        "karpenter_pods_provisioning_unstarted_time_seconds",
        "gauge",
        ("name", "namespace"),
        "The time from when Karpenter first thinks the pod can schedule until the pod is "
        "running. Note: this calculated from a point in memory, not by the pod creation "
        "timestamp.",
        _POD_METRICS,
    ),
    _m(
        "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
        "gauge",
        ("name", "namespace"),
        "The time from when Karpenter has seen a pod without making a scheduling decision for "
        "the pod. Note: this calculated from a point in memory, not by the pod creation "
        "timestamp.",
        _POD_METRICS,
    ),
    _m(
        "karpenter_pods_scheduling_decision_duration_seconds",
        "histogram",
        (),
        "The time it takes for Karpenter to first try to schedule a pod after it's been seen.",
        _POD_METRICS,
        buckets=DURATION_BUCKETS,
        eager=True,
    ),
    # -- scheduler ----------------------------------------------------------------------------
    _m(
        "karpenter_scheduler_scheduling_duration_seconds",
        "histogram",
        ("controller",),
        "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
        _SCHEDULER,
    ),
    _m(
        "karpenter_scheduler_queue_depth",
        "gauge",
        ("controller", "scheduling_id"),
        "The number of pods currently waiting to be scheduled.",
        _SCHEDULER,
    ),
    _m(
        "karpenter_scheduler_unfinished_work_seconds",
        "gauge",
        ("controller", "scheduling_id"),
        "How many seconds of work has been done that is in progress and hasn't been observed by "
        "scheduling_duration_seconds.",
        _SCHEDULER,
    ),
    _m(
        "karpenter_scheduler_unschedulable_pods_count",
        "gauge",
        ("controller",),
        "The number of unschedulable Pods.",
        _SCHEDULER,
    ),
    _m(
        "karpenter_scheduler_ignored_pods_count",
        "gauge",
        (),
        "Number of pods ignored during scheduling by Karpenter",
        _SCHEDULER,
        eager=True,
    ),
    # -- voluntary disruption -----------------------------------------------------------------
    _m(
        "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
        "histogram",
        ("reason", "consolidation_type"),
        "Duration of the disruption decision evaluation process in seconds. Labeled by method "
        "and consolidation type.",
        _DISRUPTION,
        buckets=DURATION_BUCKETS,
    ),
    _m(
        "karpenter_voluntary_disruption_decisions_total",
        "counter",
        ("decision", "reason", "consolidation_type"),
        "Number of disruption decisions performed. Labeled by disruption decision, reason, and "
        "consolidation type.",
        _DISRUPTION,
    ),
    _m(
        "karpenter_voluntary_disruption_decisions_by_nodepool_total",
        "counter",
        ("nodepool", "decision", "reason", "consolidation_type"),
        "Number of disruption decisions performed by nodepool. Labeled by nodepool name, "
        "disruption decision, reason, and consolidation type.",
        _DISRUPTION,
    ),
    _m(
        "karpenter_voluntary_disruption_eligible_nodes",
        "gauge",
        ("reason",),
        "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
        _DISRUPTION,
    ),
    _m(
        "karpenter_voluntary_disruption_consolidation_timeouts_total",
        "counter",
        ("consolidation_type",),
        "Number of times the Consolidation algorithm has reached a timeout. Labeled by "
        "consolidation type.",
        _DISRUPTION,
        eager=True,
    ),
    _m(
        "karpenter_voluntary_disruption_failed_validations_total",
        "counter",
        ("consolidation_type",),
        "Number of candidates that were selected for disruption but failed validation. Labeled "
        "by consolidation type.",
        _DISRUPTION,
    ),
    _m(
        "karpenter_voluntary_disruption_queue_failures_total",
        "counter",
        ("decision", "reason", "consolidation_type"),
        "Number of times commands to disrupt nodes have failed. Labeled by decision, reason and "
        "consolidation type.",
        _DISRUPTION,
    ),
    # -- cluster state ------------------------------------------------------------------------
    _m(
        "karpenter_cluster_state_node_count",
        "gauge",
        (),
        "Current count of nodes in cluster state",
        _STATE,
        eager=True,
    ),
    _m(
        "karpenter_cluster_state_synced",
        "gauge",
        (),
        "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and "
        "nodes that are stored in the APIServer have the same representation as Karpenter's "
        "cluster state",
        _STATE,
        eager=True,
    ),
    _m(
        "karpenter_cluster_state_unsynced_time_seconds",
        "gauge",
        (),
        "The time for which cluster state is not synced",
        _STATE,
        eager=True,
    ),
    # -- cloud provider -----------------------------------------------------------------------
    _m(
        "karpenter_cloudprovider_duration_seconds",
        "histogram",
        ("controller", "method", "provider"),
        "Duration of cloud provider method calls. Labeled by the controller, method name and "
        "provider.",
        _CLOUDPROVIDER,
    ),
    _m(
        "karpenter_cloudprovider_errors_total",
        "counter",
        ("controller", "method", "provider", "error"),
        "Total number of errors returned from CloudProvider calls.",
        _CLOUDPROVIDER,
    ),
    _m(
        "karpenter_cloudprovider_instance_type_cpu_cores",
        "gauge",
        ("instance_type",),
        "VCPUs cores for a given instance type.",
        _CLOUDPROVIDER,
    ),
    _m(
        "karpenter_cloudprovider_instance_type_memory_bytes",
        "gauge",
        ("instance_type",),
        "Memory, in bytes, for a given instance type.",
        _CLOUDPROVIDER,
    ),
    _m(
        "karpenter_cloudprovider_instance_type_offering_available",
        "gauge",
        ("instance_type", "capacity_type", "zone"),
        "Instance type offering availability, based on instance type, capacity type, and zone",
        _CLOUDPROVIDER,
    ),
    _m(
        "karpenter_cloudprovider_instance_type_offering_price_estimate",
        "gauge",
        ("instance_type", "capacity_type", "zone"),
        "Instance type offering estimated hourly price used when making informed decisions on "
        "node cost calculation, based on instance type, capacity type, and zone.",
        _CLOUDPROVIDER,
    ),
    # -- AWS provider: interruption queue -----------------------------------------------------
    _m(
        "karpenter_interruption_received_messages_total",
        "counter",
        ("message_type",),
        "Count of messages received from the SQS queue. Broken down by message type and whether "
        "the message was actionable.",
        _INTERRUPTION,
    ),
    _m(
        "karpenter_interruption_deleted_messages_total",
        "counter",
        (),
        "Count of messages deleted from the SQS queue.",
        _INTERRUPTION,
    ),
    _m(
        "karpenter_interruption_message_queue_duration_seconds",
        "histogram",
        (),
        "Amount of time an interruption message is on the queue before it is processed by "
        "karpenter.",
        _INTERRUPTION,
    ),
    _m(
        "karpenter_interruption_actions_performed_total",
        "counter",
        ("action_type", "nodepool"),
        "Number of notification actions performed. Labeled by action",
        _INTERRUPTION,
    ),
    # -- AWS batchers (create_fleet, describe_instances) ----------------------------------------
    _m(
        "karpenter_cloudprovider_batcher_batch_time_seconds",
        "histogram",
        ("batcher",),
        "Duration of the batching window per batcher",
        f"{_AWS}: pkg/batcher/metrics.go",
        buckets=DURATION_BUCKETS,
    ),
    _m(
        "karpenter_cloudprovider_batcher_batch_size",
        "histogram",
        ("batcher",),
        "Size of the request batch per batcher",
        f"{_AWS}: pkg/batcher/metrics.go",
        buckets=_BATCH_SIZE_BUCKETS,
    ),
    # -- awslabs/operatorpkg's status controllers, one set per kind -----------------------------
    *(
        _m(
            f"operator_{kind}_status_condition_{suffix}",
            cast("MetricType", mtype),
            labels,
            text,
            _OPERATORPKG_STATUS,
            buckets=buckets,
        )
        for kind in ("nodepool", "nodeclaim", "node")
        for suffix, mtype, labels, text, buckets in (
            (
                "count",
                "gauge",
                ("namespace", "name", "type", "status", "reason"),
                "The number of a condition for a given object, type and status. "
                "e.g. Alarm := Available=False > 0",
                None,
            ),
            (
                "current_status_seconds",
                "gauge",
                ("namespace", "name", "type", "status", "reason"),
                "The current amount of time in seconds that a status condition has been in a "
                "specific state. Alarm := P99(Updated=Unknown) > 5 minutes",
                None,
            ),
            (
                "transition_seconds",
                "histogram",
                ("type", "status"),
                "The amount of time a condition was in a given state before transitioning. "
                "e.g. Alarm := P99(Updated=False) > 5 minutes",
                _PROMETHEUS_DEF_BUCKETS,
            ),
            (
                "transitions_total",
                "counter",
                ("type", "status", "reason"),
                "The count of transitions of a given object, type and status.",
                None,
            ),
        )
    ),
    *(
        _m(
            f"operator_{kind}_termination_{suffix}",
            cast("MetricType", mtype),
            labels,
            text,
            _OPERATORPKG_STATUS,
            buckets=buckets,
        )
        for kind in ("nodepool", "nodeclaim", "node")
        for suffix, mtype, labels, text, buckets in (
            (
                "current_time_seconds",
                "gauge",
                ("namespace", "name"),
                "The current amount of time in seconds that an object has been in terminating "
                "state.",
                None,
            ),
            (
                "duration_seconds",
                "histogram",
                (),
                "The amount of time taken by an object to terminate completely.",
                _PROMETHEUS_DEF_BUCKETS,
            ),
        )
    ),
)

# Names the issue asked about that Karpenter v1.14.1's core does not define: no row, by design.
NOT_IN_KARPENTER: Final = ("karpenter_consolidation_score", "karpenter_consolidation_moves_total")
