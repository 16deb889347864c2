"""Metrics more than one controller area writes, with Karpenter's names and labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter

from karpy.apis.v1 import labels
from karpy.kube.metrics import REGISTRY

__all__ = ["NODECLAIMS_DISRUPTED_TOTAL", "count_disrupted"]

NODECLAIMS_DISRUPTED_TOTAL = Counter(
    "karpenter_nodeclaims_disrupted_total",
    "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was "
    "disrupted and the owning nodepool.",
    ["reason", "nodepool", "capacity_type"],
    registry=REGISTRY,
)


def count_disrupted(claim: Mapping[str, Any], reason: str) -> None:
    """Count a NodeClaim karpy deleted, whatever the controller (`expired`,
    `garbage_collected`, `launch_timeout`, `insufficient_capacity`, `empty`, ...)."""
    claim_labels = (claim.get("metadata") or {}).get("labels") or {}
    NODECLAIMS_DISRUPTED_TOTAL.labels(
        reason,
        claim_labels.get(labels.LABEL_NODEPOOL, ""),
        claim_labels.get(labels.LABEL_CAPACITY_TYPE, ""),
    ).inc()
