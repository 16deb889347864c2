"""The interruption reconciler's metrics: Karpenter's names for what Karpenter exports, `karpy_*`
for what it does not (malformed messages, queue errors)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from karpy.kube.metrics import REGISTRY

__all__ = [
    "ACTIONS_PERFORMED",
    "DELETED_MESSAGES",
    "MALFORMED_MESSAGES",
    "MESSAGE_LATENCY",
    "QUEUE_ERRORS",
    "RECEIVED_MESSAGES",
]

# Karpenter's metrics.DurationBuckets(): up to 10 minutes.
_DURATION_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 25.0),
    *(30.0, 40.0, 50.0, 60.0, 120.0, 150.0, 300.0, 450.0, 600.0),
)

RECEIVED_MESSAGES = Counter(
    "karpenter_interruption_received_messages_total",
    "Count of messages received from the SQS queue. Broken down by message type and whether "
    "the message was actionable.",
    ["message_type"],
    registry=REGISTRY,
)
DELETED_MESSAGES = Counter(
    "karpenter_interruption_deleted_messages_total",
    "Count of messages deleted from the SQS queue.",
    registry=REGISTRY,
)
MESSAGE_LATENCY = Histogram(
    "karpenter_interruption_message_queue_duration_seconds",
    "Amount of time an interruption message is on the queue before it is processed by karpenter.",
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
ACTIONS_PERFORMED = Counter(
    "karpenter_interruption_actions_performed_total",
    "Number of notification actions performed. Labeled by action",
    ["action_type", "nodepool"],
    registry=REGISTRY,
)
MALFORMED_MESSAGES = Counter(
    "karpy_interruption_malformed_messages_total",
    "Messages that could not be read (deleted without any action).",
    registry=REGISTRY,
)
QUEUE_ERRORS = Counter(
    "karpy_interruption_queue_errors_total",
    "Failed calls to the interruption queue, by operation and error code.",
    ["operation", "code"],
    registry=REGISTRY,
)
