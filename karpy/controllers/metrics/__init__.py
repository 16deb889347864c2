"""Metrics about the cluster (`karpenter_pods_state`, `karpenter_nodepools_usage`,
`karpenter_nodepools_limit`), reported by the leader."""

from __future__ import annotations

from karpy.apis.descriptors import NODEPOOLS
from karpy.controllers.context import ControllerContext
from karpy.controllers.metrics.collector import (
    NAME,
    MetricsController,
    pod_state_labels,
    resource_gauges,
)
from karpy.kube import NODES, PODS

__all__ = ["NAME", "MetricsController", "pod_state_labels", "register", "resource_gauges"]


def register(ctx: ControllerContext) -> None:
    ctx.add_runnable(
        MetricsController(
            pods=ctx.informer(PODS), nodes=ctx.informer(NODES), nodepools=ctx.informer(NODEPOOLS)
        )
    )
