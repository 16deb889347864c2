"""NodeClaim lifecycle metrics, with Karpenter's names and labels."""

from __future__ import annotations

from prometheus_client import Counter

from karpy.kube.metrics import REGISTRY

__all__ = ["NODES_CREATED"]

NODES_CREATED = Counter(
    "karpenter_nodes_created_total",
    "Number of nodes created in total by Karpenter. Labeled by owning nodepool.",
    ["nodepool"],
    registry=REGISTRY,
)
