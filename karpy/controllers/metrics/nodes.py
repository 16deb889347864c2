"""Karpenter's per-node resource gauges and cluster utilization, computed from the informer
caches when Prometheus scrapes (Karpenter's `metrics.node` controller refreshes them every 5 s).

Each node reports, per resource: `karpenter_nodes_allocatable`, `_total_pod_requests` and
`_total_pod_limits` (every bound, non-terminal pod, DaemonSet pods included),
`_total_daemon_requests` and `_total_daemon_limits` (DaemonSet pods only) and
`_system_overhead` (capacity minus allocatable); also `_current_lifetime_seconds`. Labels are
Karpenter's: one per well-known node label, then `resource_type`, `node_name` and `phase`.
`karpenter_cluster_utilization_percent` is all pod requests over all allocatable, in percent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from prometheus_client.core import GaugeMetricFamily, Metric

from karpy.apis.v1 import labels as wk
from karpy.controllers.metrics.upstream import KARPENTER_METRICS, NODE_WELL_KNOWN
from karpy.scheduling.quantity import QuantityError, milli_value, value
from karpy.scheduling.resources import ResourceError, pod_requests

__all__ = ["NODE_GAUGES", "NodeUsage", "cluster_utilization", "node_families", "node_usages"]

JSON = dict[str, Any]

# Well-known label -> the node label key it is read from.
_LABEL_KEYS: Final = {
    "nodepool": wk.LABEL_NODEPOOL,
    "capacity_type": wk.LABEL_CAPACITY_TYPE,
    "zone": wk.LABEL_TOPOLOGY_ZONE,
    "region": wk.LABEL_TOPOLOGY_REGION,
    "instance_type": wk.LABEL_INSTANCE_TYPE,
    "arch": wk.LABEL_ARCH,
    "os": wk.LABEL_OS,
    "windows_build": wk.LABEL_WINDOWS_BUILD,
}
NODE_LABELS: Final = (*NODE_WELL_KNOWN, "resource_type", "node_name", "phase")
NODE_GAUGES: Final = (
    "allocatable",
    "total_pod_requests",
    "total_pod_limits",
    "total_daemon_requests",
    "total_daemon_limits",
    "system_overhead",
)
_HELP: Final = {m.name: m.help for m in KARPENTER_METRICS}
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})


def _amounts(raw: Mapping[str, Any] | None) -> dict[str, float]:
    """A resource list as gauge values (CPU in cores, the rest in units)."""
    out: dict[str, float] = {}
    for name, amount in (raw or {}).items():
        try:
            out[str(name)] = milli_value(amount) / 1000 if name == "cpu" else float(value(amount))
        except (QuantityError, TypeError):
            continue
    return out


def _add(total: dict[str, float], more: Mapping[str, float]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0.0) + amount


def _requests(pod: Mapping[str, Any]) -> dict[str, float]:
    try:
        raw = pod_requests(pod.get("spec") or {})
    except ResourceError:
        return {}
    return {k: v / 1000 if k == "cpu" else float(v) for k, v in raw.items() if k != "pods"}


def _limits(pod: Mapping[str, Any]) -> dict[str, float]:
    total: dict[str, float] = {}
    for container in (pod.get("spec") or {}).get("containers") or ():
        _add(total, _amounts((container.get("resources") or {}).get("limits")))
    return total


def _is_daemon(pod: Mapping[str, Any]) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "DaemonSet" for o in owners)


@dataclass(slots=True)
class NodeUsage:
    """What one node has and what its pods take, per resource name."""

    node: Mapping[str, Any]
    pod_requests: dict[str, float] = field(default_factory=dict)
    pod_limits: dict[str, float] = field(default_factory=dict)
    daemon_requests: dict[str, float] = field(default_factory=dict)
    daemon_limits: dict[str, float] = field(default_factory=dict)

    @property
    def allocatable(self) -> dict[str, float]:
        return _amounts((self.node.get("status") or {}).get("allocatable"))

    @property
    def overhead(self) -> dict[str, float]:
        capacity = _amounts((self.node.get("status") or {}).get("capacity"))
        allocatable = self.allocatable
        return {k: v - allocatable.get(k, 0.0) for k, v in capacity.items()}

    def gauge(self, name: str) -> dict[str, float]:
        return {
            "allocatable": self.allocatable,
            "total_pod_requests": self.pod_requests,
            "total_pod_limits": self.pod_limits,
            "total_daemon_requests": self.daemon_requests,
            "total_daemon_limits": self.daemon_limits,
            "system_overhead": self.overhead,
        }[name]

    def label_values(self, resource: str) -> list[str]:
        meta = self.node.get("metadata") or {}
        node_labels = meta.get("labels") or {}
        return [
            *(str(node_labels.get(_LABEL_KEYS[name], "")) for name in NODE_WELL_KNOWN),
            resource.lower().replace("-", "_"),
            str(meta.get("name", "")),
            str((self.node.get("status") or {}).get("phase") or ""),
        ]


def node_usages(nodes: Iterable[JSON], pods: Iterable[JSON]) -> list[NodeUsage]:
    """Each node with the requests and limits of the non-terminal pods bound to it."""
    usages = {str((n.get("metadata") or {}).get("name", "")): NodeUsage(n) for n in nodes}
    for empty in usages.values():
        # as Karpenter's RequestsForPods, requests count the pods too (resource_type="pods")
        empty.pod_requests["pods"] = 0.0
        empty.daemon_requests["pods"] = 0.0
    for pod in pods:
        usage = usages.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        if usage is None or (pod.get("status") or {}).get("phase") in _TERMINAL:
            continue
        requests, limits = {**_requests(pod), "pods": 1.0}, _limits(pod)
        _add(usage.pod_requests, requests)
        _add(usage.pod_limits, limits)
        if _is_daemon(pod):
            _add(usage.daemon_requests, requests)
            _add(usage.daemon_limits, limits)
    return list(usages.values())


def cluster_utilization(usages: Iterable[NodeUsage]) -> dict[str, float]:
    """Per resource: the pods' requests as a percentage of all nodes' allocatable."""
    requested: dict[str, float] = {}
    allocatable: dict[str, float] = {}
    for usage in usages:
        _add(requested, usage.pod_requests)
        _add(allocatable, usage.allocatable)
    return {
        name.lower().replace("-", "_"): 100.0 * requested.get(name, 0.0) / amount
        for name, amount in allocatable.items()
        if amount > 0
    }


def _age(node: Mapping[str, Any], now: datetime) -> float | None:
    created = (node.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return None
    try:
        return (now - datetime.fromisoformat(str(created).replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return None


def node_families(usages: list[NodeUsage] | None, now: datetime) -> Iterator[Metric]:
    """The node gauges' families; empty (but declared) when `usages` is None (not leading)."""
    for suffix in NODE_GAUGES:
        name = f"karpenter_nodes_{suffix}"
        family = GaugeMetricFamily(name, _HELP[name], labels=NODE_LABELS)
        for usage in usages or ():
            for resource, amount in usage.gauge(suffix).items():
                family.add_metric(usage.label_values(resource), amount)
        yield family
    name = "karpenter_nodes_current_lifetime_seconds"
    lifetime = GaugeMetricFamily(name, _HELP[name], labels=("node_name", "nodepool"))
    for usage in usages or ():
        meta = usage.node.get("metadata") or {}
        age = _age(usage.node, now)
        if age is not None:
            pool = (meta.get("labels") or {}).get(wk.LABEL_NODEPOOL, "")
            lifetime.add_metric([str(meta.get("name", "")), str(pool)], age)
    yield lifetime
    name = "karpenter_cluster_utilization_percent"
    utilization = GaugeMetricFamily(name, _HELP[name], labels=("resource_type",))
    if usages is not None:
        for resource, percent in sorted(cluster_utilization(usages).items()):
            utilization.add_metric([resource], percent)
    yield utilization
