"""NodeClaim termination metrics, with Karpenter's names and labels."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter

from karpy.kube.metrics import REGISTRY, QuantileSummary

__all__ = [
    "INSTANCE_TERMINATION_DURATION",
    "NODECLAIMS_TERMINATED",
    "NODECLAIM_TERMINATION_DURATION",
]

NODECLAIMS_TERMINATED: Final = Counter(
    "karpenter_nodeclaims_terminated_total",
    "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, "
    "capacity type, and zone.",
    ["nodepool", "capacity_type", "zone"],
    registry=REGISTRY,
)
NODECLAIM_TERMINATION_DURATION: Final = QuantileSummary(
    "karpenter_nodeclaims_termination_duration_seconds",
    "Duration of NodeClaim termination in seconds.",
    ["nodepool"],
    registry=REGISTRY,
)
INSTANCE_TERMINATION_DURATION: Final = QuantileSummary(
    "karpenter_nodeclaims_instance_termination_duration_seconds",
    "Duration of CloudProvider Instance termination in seconds.",
    ["nodepool"],
    registry=REGISTRY,
)
