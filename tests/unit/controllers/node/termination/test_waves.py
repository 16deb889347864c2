"""Drain waves: which pods the drain works on now, and which wait for the wave before theirs.

The drain works on one wave at a time, in Karpenter's order (non-critical workloads, non-critical
DaemonSet pods, critical workloads, critical DaemonSet pods), and a wave lasts until its pods are
gone from the node, not merely evicted. Pods the kubelet owns (static pods, seen in the API as
mirror pods) and pods that tolerate `karpenter.sh/disrupted` belong to no wave.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from karpy.apis.objects import format_time
from karpy.controllers.node.termination.pods import (
    current_wave,
    drain_tiers,
    is_waiting_eviction,
)
from tests import kit

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
JSON = dict[str, Any]

pod = partial(
    kit.pod,
    namespace="ns",
    node="n",
    created=format_time(NOW - timedelta(hours=1)),
    status={"phase": "Running"},
)
DAEMONSET: JSON = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "d"}
REPLICASET: JSON = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "r"}
NODE: JSON = {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "n", "controller": True}
MIRROR = {"kubernetes.io/config.mirror": "abc", "kubernetes.io/config.source": "file"}


def names(pods: list[JSON]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def wave(pods: list[JSON], now: datetime = NOW) -> list[str]:
    """The wave the drain works on, from everything on the node (as the drain reads it)."""
    return names(current_wave(p for p in pods if is_waiting_eviction(p, now)))


def tiers(pods: list[JSON]) -> list[list[str]]:
    return [names(t) for t in drain_tiers(pods)]


def terminating(p: JSON, seconds_left: int = 50) -> JSON:
    p["metadata"]["deletionTimestamp"] = format_time(NOW + timedelta(seconds=seconds_left))
    return p


def test_only_the_two_system_priority_classes_are_critical() -> None:
    pods = [
        pod("node-critical", priority_class="system-node-critical"),
        pod("cluster-critical", priority_class="system-cluster-critical"),
        pod("high", priority_class="high-priority"),
        pod("lookalike", priority_class="system-critical"),
        pod("none"),
    ]
    assert tiers(pods) == [
        ["high", "lookalike", "none"],
        [],
        ["node-critical", "cluster-critical"],
        [],
    ]


def test_only_a_daemonset_owner_makes_a_daemon_pod() -> None:
    pods = [
        pod("ds", owner=DAEMONSET),
        pod("rs", owner=REPLICASET),
        pod("job", owner={"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j"}),
        pod("critical-ds", owner=DAEMONSET, priority_class="system-node-critical"),
        pod("critical-rs", owner=REPLICASET, priority_class="system-cluster-critical"),
    ]
    assert tiers(pods) == [["rs", "job"], ["ds"], ["critical-rs"], ["critical-ds"]]


def test_the_waves_run_in_karpenters_order_each_once_the_one_before_is_gone() -> None:
    node = [
        pod("deployment", owner=REPLICASET),
        pod("daemonset", owner=DAEMONSET),
        pod("critical-deployment", owner=REPLICASET, priority_class="system-node-critical"),
        pod("critical-daemonset", owner=DAEMONSET, priority_class="system-cluster-critical"),
    ]
    seen: list[list[str]] = []
    while node:
        current = wave(node)
        seen.append(current)
        node = [p for p in node if p["metadata"]["name"] not in current]
    assert seen == [
        ["deployment"],
        ["daemonset"],
        ["critical-deployment"],
        ["critical-daemonset"],
    ]


def test_a_wave_that_is_terminating_holds_the_next_one_back() -> None:
    node = [
        terminating(pod("deployment", owner=REPLICASET)),
        pod("daemonset", owner=DAEMONSET),
        pod("critical", priority_class="system-node-critical"),
    ]
    assert wave(node) == ["deployment"]
    # its pods still there and terminating: DaemonSet pods are not touched yet
    node[0] = terminating(pod("deployment", owner=REPLICASET), seconds_left=1)
    assert wave(node) == ["deployment"]
    assert wave(node[1:]) == ["daemonset"]


def test_a_pod_stuck_terminating_a_minute_past_its_deadline_no_longer_holds_the_drain() -> None:
    stuck = terminating(pod("deployment", owner=REPLICASET), seconds_left=-61)
    assert wave([stuck, pod("daemonset", owner=DAEMONSET)]) == ["daemonset"]
    late = terminating(pod("deployment", owner=REPLICASET), seconds_left=-30)
    assert wave([late, pod("daemonset", owner=DAEMONSET)]) == ["deployment"]


def test_static_pods_seen_as_mirror_pods_are_in_no_wave() -> None:
    static_critical = pod(
        "kube-proxy-n", owner=NODE, annotations=MIRROR, priority_class="system-node-critical"
    )
    static_plain = pod("etcd-n", owner=NODE, annotations=MIRROR)
    assert wave([static_critical, static_plain]) == []
    node = [static_plain, static_critical, pod("daemonset", owner=DAEMONSET)]
    assert wave(node) == ["daemonset"]
    assert wave(node[:2]) == [], "a node left with its static pods only is drained"


def test_pods_tolerating_the_disrupted_taint_are_in_no_wave() -> None:
    tolerant = pod(
        "tolerant",
        owner=REPLICASET,
        tolerations=[{"key": "karpenter.sh/disrupted", "operator": "Exists"}],
    )
    everything = pod("everything", owner=DAEMONSET, tolerations=[{"operator": "Exists"}])
    other_effect = pod(
        "no-execute-only",
        owner=REPLICASET,
        tolerations=[
            {"key": "karpenter.sh/disrupted", "operator": "Exists", "effect": "NoExecute"}
        ],
    )
    assert wave([tolerant, everything]) == []
    assert wave([tolerant, everything, other_effect]) == ["no-execute-only"]


def test_terminal_pods_are_in_no_wave() -> None:
    done = pod("done", owner=REPLICASET, status={"phase": "Succeeded"})
    failed = pod("failed", owner=DAEMONSET, status={"phase": "Failed"})
    assert wave([done, failed, pod("critical", priority_class="system-node-critical")]) == [
        "critical"
    ]
