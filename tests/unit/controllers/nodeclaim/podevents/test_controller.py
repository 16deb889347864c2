"""Which pod changes count as pod events (the node whose pods changed)."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.controllers.nodeclaim.podevents import is_pod_event
from tests.kit import pod

RUNNING = {"phase": "Running"}
DELETED = "2026-01-01T00:00:00Z"
DAEMONSET = {"kind": "DaemonSet", "name": "ds", "uid": "u"}


@pytest.mark.parametrize(
    ("old", "new", "node"),
    [
        (pod(status=RUNNING), pod(node="n1", status=RUNNING), "n1"),  # bound
        (
            pod(node="n1", status=RUNNING),
            pod(node="n1", status={"phase": "Succeeded"}),
            "n1",
        ),  # terminal
        (
            pod(node="n1", status=RUNNING),
            pod(node="n1", deleted=DELETED, status=RUNNING),
            "n1",
        ),  # terminating
        (pod(node="n1", status=RUNNING), None, "n1"),  # gone
        # already finished: nothing left the node
        (pod(node="n1", status={"phase": "Failed"}), None, None),
        (pod(node="n1", status=RUNNING), pod(node="n1", status=RUNNING), None),  # nothing happened
        (None, pod(node="n1", status=RUNNING), None),  # first sight (a replay after restart)
        (
            pod(owner=DAEMONSET, status=RUNNING),
            pod(node="n1", owner=DAEMONSET, status=RUNNING),
            None,
        ),  # DaemonSet pods don't count
        (pod(status=RUNNING), pod(status=RUNNING), None),  # still pending
    ],
)
def test_pod_events(
    old: dict[str, Any] | None, new: dict[str, Any] | None, node: str | None
) -> None:
    assert is_pod_event(old, new) == node
