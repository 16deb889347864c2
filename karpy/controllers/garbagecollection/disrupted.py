"""Counting NodeClaims that expiration and garbage collection delete, in
`karpenter_nodeclaims_disrupted_total{reason, nodepool, capacity_type}` (the disruption area's
metric), with Karpenter's reasons `expired` and `garbage_collected`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpy.apis.v1 import labels
from karpy.controllers.disruption.metrics import NODECLAIMS_DISRUPTED_TOTAL

__all__ = ["count_disrupted"]


def count_disrupted(claim: Mapping[str, Any], reason: str) -> None:
    claim_labels = (claim.get("metadata") or {}).get("labels") or {}
    NODECLAIMS_DISRUPTED_TOTAL.labels(
        reason,
        claim_labels.get(labels.LABEL_NODEPOOL, ""),
        claim_labels.get(labels.LABEL_CAPACITY_TYPE, ""),
    ).inc()
