"""The registration-health ring buffer, and which pod changes count as pod events."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.controllers.nodeclaim.podevents import is_pod_event
from karpy.state.nodepoolhealth import HealthStatus, NodePoolHealth

DEPS = ("ValidationSucceeded", "NodeClassReady")


def by_type(conditions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in conditions}


def test_registration_health_ring_buffer() -> None:
    health = NodePoolHealth()
    seen: list[str] = []
    health.subscribe(seen.append)
    assert health.status("p") is HealthStatus.UNKNOWN
    health.record_success("p")
    health.record_failure("p")
    assert health.status("p") is HealthStatus.HEALTHY  # 1 failure in 4 slots: 25%
    health.record_failure("p", reason="InsufficientCapacity", message="none")
    assert health.status("p") is HealthStatus.UNHEALTHY  # 2 of 4: 50%
    last = health.last_failure("p")
    assert last is not None and last.reason == "InsufficientCapacity"
    for _ in range(3):
        health.record_success("p")
    assert health.status("p") is HealthStatus.HEALTHY  # the failures fell out of the buffer
    assert seen == ["p"] * 6
    health.reset("p")
    assert health.status("p") is HealthStatus.UNKNOWN


def pod(
    node: str = "",
    *,
    phase: str = "Running",
    deleting: bool = False,
    daemonset: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if daemonset:
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds", "uid": "u"}]
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("old", "new", "node"),
    [
        (pod(), pod("n1"), "n1"),  # bound
        (pod("n1"), pod("n1", phase="Succeeded"), "n1"),  # terminal
        (pod("n1"), pod("n1", deleting=True), "n1"),  # terminating
        (pod("n1"), None, "n1"),  # gone
        (pod("n1", phase="Failed"), None, None),  # already finished: nothing left the node
        (pod("n1"), pod("n1"), None),  # nothing happened
        (None, pod("n1"), None),  # first sight (a replay after restart)
        (pod(daemonset=True), pod("n1", daemonset=True), None),  # DaemonSet pods don't count
        (pod(), pod(), None),  # still pending
    ],
)
def test_pod_events(
    old: dict[str, Any] | None, new: dict[str, Any] | None, node: str | None
) -> None:
    assert is_pod_event(old, new) == node
