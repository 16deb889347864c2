"""The per-node resource gauges and cluster utilization, from nodes and their pods."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from karpy.controllers.metrics.nodes import cluster_utilization, node_families, node_usages


def _node(name: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"karpenter.sh/nodepool": "default", "kubernetes.io/arch": "amd64"},
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "3500m", "memory": "15Gi", "pods": "110"},
        },
    }


def _pod(
    node: str, cpu: str, *, limit: str | None = None, daemon: bool = False, phase: str = "Running"
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    if limit:
        resources["limits"] = {"cpu": limit}
    meta: dict[str, Any] = {"name": f"p-{cpu}", "namespace": "default"}
    if daemon:
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds", "apiVersion": "apps/v1"}]
    return {
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": resources}]},
        "status": {"phase": phase},
    }


def test_requests_limits_and_overhead_per_node() -> None:
    pods = [
        _pod("a", "1", limit="2"),
        _pod("a", "250m", daemon=True),
        _pod("a", "3", phase="Succeeded"),  # finished pods hold nothing
        _pod("elsewhere", "1"),
    ]
    [usage] = node_usages([_node("a")], pods)
    assert usage.pod_requests["cpu"] == 1.25  # DaemonSet pods included, as Karpenter's
    assert usage.daemon_requests["cpu"] == 0.25
    assert usage.pod_limits["cpu"] == 2.0
    assert usage.overhead["cpu"] == 0.5
    assert usage.overhead["memory"] == 1024**3
    assert cluster_utilization([usage])["cpu"] == 100 * 1.25 / 3.5


def test_families_carry_karpenters_labels() -> None:
    usages = node_usages([_node("a")], [_pod("a", "1")])
    families = {f.name: f for f in node_families(usages, datetime(2026, 1, 1, 0, 1, tzinfo=UTC))}
    sample = next(
        s
        for s in families["karpenter_nodes_allocatable"].samples
        if s.labels["resource_type"] == "cpu"
    )
    assert sample.value == 3.5
    assert sample.labels["node_name"] == "a"
    assert sample.labels["nodepool"] == "default"
    assert sample.labels["arch"] == "amd64"
    [age] = families["karpenter_nodes_current_lifetime_seconds"].samples
    assert age.value == 60.0
    # not leading: declared but empty
    assert all(not f.samples for f in node_families(None, datetime.now(UTC)))
