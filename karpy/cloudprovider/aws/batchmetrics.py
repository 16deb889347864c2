"""Karpenter's EC2 batcher metrics: how long each batch stayed open and how many requests it
merged, per batcher (`create_fleet`, `describe_instances`, Karpenter's names). A scale-up that
makes one CreateFleet call for hundreds of NodeClaims shows here as one large batch."""

from __future__ import annotations

from typing import Final

from prometheus_client import Histogram

from karpy.kube.metrics import REGISTRY

__all__ = ["BATCH_SIZE", "BATCH_TIME", "CREATE_FLEET", "DESCRIBE_INSTANCES", "observe_batch"]

CREATE_FLEET: Final = "create_fleet"
DESCRIBE_INSTANCES: Final = "describe_instances"

# Karpenter's metrics.DurationBuckets() (the upstream metrics table checks them).
_DURATION_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7),
    *(0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20),
    *(25, 30, 40, 50, 60, 120, 150, 300, 450, 600),
)
# Karpenter's batcher SizeBuckets().
_SIZE_BUCKETS: Final = (
    *(1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200),
    *(225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000),
)

BATCH_TIME: Final = Histogram(
    "karpenter_cloudprovider_batcher_batch_time_seconds",
    "Duration of the batching window per batcher",
    ["batcher"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
BATCH_SIZE: Final = Histogram(
    "karpenter_cloudprovider_batcher_batch_size",
    "Size of the request batch per batcher",
    ["batcher"],
    buckets=_SIZE_BUCKETS,
    registry=REGISTRY,
)


def observe_batch(batcher: str, *, seconds: float, size: int) -> None:
    """One batch sent: open for `seconds`, merging `size` requests."""
    BATCH_TIME.labels(batcher=batcher).observe(max(0.0, seconds))
    BATCH_SIZE.labels(batcher=batcher).observe(size)
