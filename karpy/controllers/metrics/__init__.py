"""Metrics about the cluster (`karpenter_pods_state`, `karpenter_nodepools_usage`,
`karpenter_nodepools_limit`, the node resource gauges, pod timings and NodePool cost), reported
by the leader; operatorpkg's `operator_<kind>_status_condition_*` and
`operator_<kind>_termination_*` for NodePools, NodeClaims and Nodes (leader too); and
`karpenter_build_info`."""

from __future__ import annotations

from karpy.apis.descriptors import NODECLAIMS, NODEPOOLS
from karpy.controllers.context import ControllerContext
from karpy.controllers.metrics import buildinfo as buildinfo
from karpy.controllers.metrics.collector import (
    NAME,
    MetricsController,
    pod_state_labels,
    resource_gauges,
)
from karpy.controllers.metrics.conditions import StatusConditionMetrics
from karpy.controllers.metrics.cost import CostController
from karpy.kube import NODES, PODS

__all__ = ["NAME", "MetricsController", "pod_state_labels", "register", "resource_gauges"]


def register(ctx: ControllerContext) -> None:
    ctx.add_runnable(
        MetricsController(
            pods=ctx.informer(PODS), nodes=ctx.informer(NODES), nodepools=ctx.informer(NODEPOOLS)
        )
    )
    ctx.add_runnable(
        StatusConditionMetrics(
            informers={
                "nodepool": ctx.informer(NODEPOOLS),
                "nodeclaim": ctx.informer(NODECLAIMS),
                "node": ctx.informer(NODES),
            }
        )
    )
    ctx.add_runnable(
        CostController(
            cloud_provider=ctx.cloud_provider,
            nodepools=ctx.informer(NODEPOOLS),
            nodeclaims=ctx.informer(NODECLAIMS),
            client=ctx.client,
        )
    )
