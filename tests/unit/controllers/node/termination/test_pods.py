"""Drain rules on pod dicts: what the drain waits for, what it may evict, tiers, force delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from karpy.apis.objects import format_time
from karpy.controllers.node.termination.pods import (
    drain_tiers,
    has_do_not_disrupt,
    is_drainable,
    is_evictable,
    is_waiting_eviction,
    needs_force_delete,
    tolerates_disrupted_taint,
)
from tests import kit

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
JSON = dict[str, Any]


RUNNING: JSON = {"phase": "Running"}
# The pods of these tests: on node `n`, created an hour ago, running.
pod = partial(
    kit.pod, namespace="ns", node="n", created=format_time(NOW - timedelta(hours=1)), status=RUNNING
)


def owned_by(api_version: str, kind: str) -> JSON:
    return {"apiVersion": api_version, "kind": kind, "name": "o"}


def test_an_ordinary_running_pod_is_waited_for_and_evictable() -> None:
    assert is_waiting_eviction(pod(), NOW)
    assert is_evictable(pod(), NOW)


def test_terminal_pods_are_not_waited_for() -> None:
    for phase in ("Succeeded", "Failed"):
        assert not is_waiting_eviction(pod(status={"phase": phase}), NOW)
        assert not is_evictable(pod(status={"phase": phase}), NOW)


def test_mirror_pods_are_neither_drained_nor_evicted() -> None:
    mirror = pod(owner=owned_by("v1", "Node"))
    assert not is_drainable(mirror, NOW)
    assert not is_evictable(mirror, NOW)


def test_pods_tolerating_the_disrupted_taint_are_left_alone() -> None:
    for toleration in (
        {"key": "karpenter.sh/disrupted", "operator": "Exists"},
        {"key": "karpenter.sh/disrupted", "operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists"},
    ):
        tolerant = pod(tolerations=[toleration])
        assert tolerates_disrupted_taint(tolerant)
        assert not is_waiting_eviction(tolerant, NOW)
    other = pod(tolerations=[{"key": "karpenter.sh/disrupted", "effect": "NoExecute"}])
    assert not tolerates_disrupted_taint(other)
    broken = pod(tolerations=[{"key": "x", "operator": "Sometimes"}])
    assert not tolerates_disrupted_taint(broken)


def test_terminating_pods_are_waited_for_until_stuck_a_minute_past_their_deadline() -> None:
    recent = pod(deleted=format_time(NOW - timedelta(seconds=30)))
    assert is_waiting_eviction(recent, NOW)
    assert not is_evictable(recent, NOW)
    stuck = pod(deleted=format_time(NOW - timedelta(seconds=61)))
    assert not is_waiting_eviction(stuck, NOW)


def test_do_not_disrupt_is_waited_for_but_never_evicted() -> None:
    keep = pod(annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert has_do_not_disrupt(keep, NOW)
    assert is_waiting_eviction(keep, NOW)
    assert not is_evictable(keep, NOW)
    assert not has_do_not_disrupt(pod(annotations={"karpenter.sh/do-not-disrupt": "false"}), NOW)


def test_do_not_disrupt_durations_run_from_the_pod_start() -> None:
    young = pod(annotations={"karpenter.sh/do-not-disrupt": "2h"})
    assert has_do_not_disrupt(young, NOW)
    old = pod(annotations={"karpenter.sh/do-not-disrupt": "30m"})
    assert not has_do_not_disrupt(old, NOW)
    assert not has_do_not_disrupt(pod(annotations={"karpenter.sh/do-not-disrupt": "soon"}), NOW)


def test_do_not_disrupt_durations_run_from_the_start_time_not_the_creation() -> None:
    created_long_ago = pod(
        annotations={"karpenter.sh/do-not-disrupt": "30m"},
        created=format_time(NOW - timedelta(hours=3)),
    )
    created_long_ago["status"]["startTime"] = format_time(NOW - timedelta(minutes=10))
    assert has_do_not_disrupt(created_long_ago, NOW)  # started 10 minutes ago: still protected
    created_long_ago["status"]["startTime"] = format_time(NOW - timedelta(minutes=40))
    assert not has_do_not_disrupt(created_long_ago, NOW)


def test_tiers_put_workloads_first_then_daemons_then_critical() -> None:
    pods = [
        pod(
            "critical-ds",
            owner=owned_by("apps/v1", "DaemonSet"),
            priority_class="system-node-critical",
        ),
        pod("ds", owner=owned_by("apps/v1", "DaemonSet")),
        pod("critical", priority_class="system-cluster-critical"),
        pod("app", owner=owned_by("apps/v1", "ReplicaSet")),
        pod("plain", priority_class="high"),
    ]
    tiers = [[p["metadata"]["name"] for p in tier] for tier in drain_tiers(pods)]
    assert tiers == [["app", "plain"], ["ds"], ["critical"], ["critical-ds"]]


def test_force_delete_when_the_pod_grace_period_no_longer_fits() -> None:
    deadline = NOW + timedelta(seconds=20)
    assert not needs_force_delete(pod(grace=10), deadline, NOW)
    assert needs_force_delete(pod(grace=30), deadline, NOW)
    assert not needs_force_delete(pod(grace=30), None, NOW)
    assert needs_force_delete(pod(grace=10), deadline, NOW + timedelta(seconds=11))


def test_force_delete_a_terminating_pod_only_if_it_would_outlive_the_deadline() -> None:
    deadline = NOW + timedelta(seconds=20)
    finishing = pod(deleted=format_time(NOW + timedelta(seconds=10)))
    assert not needs_force_delete(finishing, deadline, NOW)
    lingering = pod(deleted=format_time(NOW + timedelta(seconds=40)))
    assert needs_force_delete(lingering, deadline, NOW)
