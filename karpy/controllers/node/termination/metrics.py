"""Node termination and drain metrics, with Karpenter's names and labels."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

from karpy.kube.metrics import REGISTRY, QuantileSummary

__all__ = [
    "EVICTION_QUEUE_DEPTH",
    "NODES_DRAINED",
    "NODES_TERMINATED",
    "NODE_LIFETIME",
    "NODE_TERMINATION_DURATION",
    "PODS_DRAINED",
    "POD_EVICTION_REQUESTS",
]

_HOUR: Final = 3600.0
_DAY: Final = 24 * _HOUR

NODES_TERMINATED: Final = Counter(
    "karpenter_nodes_terminated_total",
    "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
    ["nodepool", "zone"],
    registry=REGISTRY,
)
NODE_TERMINATION_DURATION: Final = QuantileSummary(
    "karpenter_nodes_termination_duration_seconds",
    "The time taken between a node's deletion request and the removal of its finalizer",
    ["nodepool"],
    registry=REGISTRY,
)
NODE_LIFETIME: Final = Histogram(
    "karpenter_nodes_lifetime_duration_seconds",
    "The lifetime duration of the nodes since creation.",
    ["nodepool"],
    buckets=(
        *(15 * 60.0, 30 * 60.0, 45 * 60.0),
        *(h * _HOUR for h in (1, 2, 4, 6, 8, 10, 12, 16, 20)),
        *(d * _DAY for d in (1, 2, 3, 5, 10, 15, 20, 25, 30)),
    ),
    registry=REGISTRY,
)
NODES_DRAINED: Final = Counter(
    "karpenter_nodes_drained_total",
    "The total number of nodes drained by Karpenter",
    ["nodepool"],
    registry=REGISTRY,
)
POD_EVICTION_REQUESTS: Final = Counter(
    "karpenter_pods_eviction_requests_total",
    "The total number of pod eviction requests made by Karpenter, labeled by response code",
    ["code"],
    registry=REGISTRY,
)
PODS_DRAINED: Final = Counter(
    "karpenter_pods_drained_total",
    "The total number of pods drained during node termination by Karpenter, labeled by reason",
    ["reason"],
    registry=REGISTRY,
)
EVICTION_QUEUE_DEPTH: Final = Gauge(
    "karpenter_nodes_eviction_queue_depth",
    "The number of pods currently waiting for a successful eviction in the eviction queue.",
    registry=REGISTRY,
)
