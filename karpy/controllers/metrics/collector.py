"""Karpenter's cluster metrics, computed from the informer caches when Prometheus scrapes.

- `karpenter_pods_state`: 1 per pod, labelled by name, namespace, owner, node, nodepool, zone,
  arch, capacity_type, instance_type and phase (the node's labels, when the pod is bound);
- `karpenter_nodepools_usage`: each NodePool's `status.resources`;
- `karpenter_nodepools_limit`: each NodePool's `spec.limits`;
- the per-node resource gauges and cluster utilization of `nodes.py`.

While it leads, the controller also keeps the pod timing metrics of `pods.py` current.

Resource names are lower case with `-` as `_` (`ephemeral_storage`); CPU is in cores. Only
the leader reports them, as only Karpenter's leader runs its metrics controllers: the
leader-only `MetricsController` switches its sources on while it leads.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from karpy.apis.v1.labels import (
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.controllers.metrics.nodes import node_families, node_usages
from karpy.controllers.metrics.pods import PodTimings
from karpy.kube import Informer
from karpy.kube.metrics import REGISTRY
from karpy.scheduling.quantity import QuantityError, milli_value, value

__all__ = ["NAME", "MetricsController", "pod_state_labels", "resource_gauges"]

NAME = "metrics"
POD_TIMINGS_PERIOD = 1.0
POD_LABELS = (
    "name",
    "namespace",
    "owner",
    "node",
    "nodepool",
    "zone",
    "arch",
    "capacity_type",
    "instance_type",
    "phase",
)

JSON = dict[str, Any]


def _owner_link(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    owners = meta.get("ownerReferences") or ()
    if not owners:
        return ""
    owner = owners[0]
    return (
        f"/apis/{owner.get('apiVersion', '')}/namespaces/{meta.get('namespace', '')}/"
        f"{str(owner.get('kind', '')).lower()}s/{owner.get('name', '')}"
    )


def pod_state_labels(pod: Mapping[str, Any], node: Mapping[str, Any] | None) -> list[str]:
    """The label values of a pod's `karpenter_pods_state` sample, in `POD_LABELS` order."""
    meta = pod.get("metadata") or {}
    node_labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    return [
        str(meta.get("name", "")),
        str(meta.get("namespace", "")),
        _owner_link(pod),
        str((pod.get("spec") or {}).get("nodeName") or ""),
        node_labels.get(LABEL_NODEPOOL, ""),
        node_labels.get(LABEL_TOPOLOGY_ZONE, ""),
        node_labels.get(LABEL_ARCH, ""),
        node_labels.get(LABEL_CAPACITY_TYPE, ""),
        node_labels.get(LABEL_INSTANCE_TYPE, ""),
        str((pod.get("status") or {}).get("phase") or ""),
    ]


def resource_gauges(resources: Mapping[str, Any] | None) -> dict[str, float]:
    """A resource list as gauge values: `resource_type` -> amount (CPU in cores)."""
    out: dict[str, float] = {}
    for name, amount in (resources or {}).items():
        try:
            number = milli_value(amount) / 1000 if name == "cpu" else float(value(amount))
        except (QuantityError, TypeError):
            continue
        out[str(name).lower().replace("-", "_")] = number
    return out


class _Sources:
    __slots__ = ("nodepools", "nodes", "pods")

    def __init__(self, *, pods: Informer, nodes: Informer, nodepools: Informer) -> None:
        self.pods = pods
        self.nodes = nodes
        self.nodepools = nodepools


class _ClusterMetrics(Collector):
    def __init__(self) -> None:
        self.active: weakref.WeakSet[MetricsController] = weakref.WeakSet()

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        pods_state = GaugeMetricFamily(
            "karpenter_pods_state",
            "Pod state is the current state of pods. This metric can be used several ways as it "
            "is labeled by the pod name, namespace, owner, node, nodepool name, zone, "
            "architecture, capacity type, instance type and pod phase.",
            labels=POD_LABELS,
        )
        usage = GaugeMetricFamily(
            "karpenter_nodepools_usage",
            "The amount of resources that have been provisioned for a nodepool. Labeled by "
            "nodepool name and resource type.",
            labels=("nodepool", "resource_type"),
        )
        limit = GaugeMetricFamily(
            "karpenter_nodepools_limit",
            "Limits specified on the nodepool that restrict the quantity of resources "
            "provisioned. Labeled by nodepool name and resource type.",
            labels=("nodepool", "resource_type"),
        )
        active = list(self.active)
        usages = None
        if active:
            sources = active[-1].sources
            usages = node_usages(sources.nodes.list(), sources.pods.list())
            for pod in sources.pods.list():
                node_name = (pod.get("spec") or {}).get("nodeName")
                node = sources.nodes.get(node_name) if node_name else None
                pods_state.add_metric(pod_state_labels(pod, node), 1.0)
            for pool in sources.nodepools.list():
                name = str((pool.get("metadata") or {}).get("name", ""))
                for resource, amount in resource_gauges(
                    (pool.get("status") or {}).get("resources")
                ).items():
                    usage.add_metric([name, resource], amount)
                for resource, amount in resource_gauges(
                    (pool.get("spec") or {}).get("limits")
                ).items():
                    limit.add_metric([name, resource], amount)
        yield pods_state
        yield usage
        yield limit
        yield from node_families(usages, datetime.now(UTC))


_COLLECTOR = _ClusterMetrics()
REGISTRY.register(_COLLECTOR)


class MetricsController:
    """A leader-only runnable: while it runs, `/metrics` reports the cluster metrics."""

    needs_leader_election = True

    def __init__(self, *, pods: Informer, nodes: Informer, nodepools: Informer) -> None:
        self.sources = _Sources(pods=pods, nodes=nodes, nodepools=nodepools)

    def __repr__(self) -> str:
        return f"<{NAME}>"

    async def start(self, stop: asyncio.Event) -> None:
        _COLLECTOR.active.add(self)
        timings = PodTimings(since=time.time())
        try:
            while not stop.is_set():
                timings.update(self.sources.pods.list(), time.time())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=POD_TIMINGS_PERIOD)
        finally:
            _COLLECTOR.active.discard(self)
            timings.update((), time.time())
