"""The raw-object readers every controller shares: absent or malformed fields read as absent."""

from __future__ import annotations

from typing import Any

from karpy.apis.objects import (
    conditions_of,
    get_condition,
    has_finalizer,
    is_condition_true,
    is_deleting,
    is_node_ready,
    label,
)

READY = {"type": "Ready", "status": "True"}
DRAINED = {"type": "Drained", "status": "Unknown"}
NODE: dict[str, Any] = {
    "metadata": {
        "name": "n",
        "labels": {"karpenter.sh/nodepool": "pool"},
        "finalizers": ["karpenter.sh/termination"],
        "deletionTimestamp": "2026-03-01T12:00:00Z",
    },
    "status": {"conditions": [READY, DRAINED]},
}


def test_conditions_are_found_on_objects_and_in_lists() -> None:
    assert get_condition(NODE, "Drained") == DRAINED
    assert get_condition([READY, DRAINED], "Ready") == READY
    assert get_condition(NODE, "Launched") is None
    assert is_node_ready(NODE)
    assert is_condition_true([READY], "Ready")
    assert not is_condition_true(NODE, "Drained")


def test_missing_or_malformed_status_reads_as_no_conditions() -> None:
    assert conditions_of(None) == []
    assert conditions_of({}) == []
    assert conditions_of({"status": "nonsense"}) == []
    assert conditions_of({"status": {"conditions": [READY, "nonsense"]}}) == [READY]
    assert get_condition(None, "Ready") is None
    assert not is_node_ready(None)


def test_metadata_readers() -> None:
    assert is_deleting(NODE)
    assert has_finalizer(NODE)
    assert not has_finalizer(NODE, "other")
    assert label(NODE, "karpenter.sh/nodepool") == "pool"
    assert label(NODE, "missing") == ""
    assert not is_deleting({"metadata": None})
    assert label({}, "karpenter.sh/nodepool") == ""
