"""The condition library: reasons, transition times, observedGeneration and the root `Ready`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpy.apis.conditions import Conditions, same_conditions

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LATER = T0 + timedelta(minutes=1)
DEPS = ("Launched", "Registered", "Initialized")


def claim(conditions: list[dict[str, Any]] | None = None, generation: int = 3) -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "generation": generation},
        "status": {"conditions": conditions or []},
    }


def test_a_new_condition_carries_reason_generation_and_time() -> None:
    conds = Conditions.of(claim(), now=T0)
    assert conds.set_true("Drained")
    assert conds.get("Drained") == {
        "type": "Drained",
        "status": "True",
        "reason": "Drained",
        "message": "",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    conds.set_unknown("Registered")
    assert conds.get("Registered")["reason"] == "AwaitingReconciliation"


def test_transition_time_moves_only_with_the_status() -> None:
    first = Conditions.of(claim(), now=T0)
    first.set_false("NodeClassReady", reason="NodeClassNotFound", message="a")
    later = Conditions.of(claim(first.items), now=LATER)
    assert later.set_false("NodeClassReady", reason="Other", message="b")
    assert later.get("NodeClassReady")["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert later.get("NodeClassReady")["reason"] == "Other"
    assert not later.set_false("NodeClassReady", reason="Other", message="b")  # nothing new
    assert later.set_true("NodeClassReady")
    assert later.get("NodeClassReady")["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert later.since("NodeClassReady") == LATER


def test_of_copies_and_the_object_is_left_alone() -> None:
    obj = claim([{"type": "Launched", "status": "True", "reason": "Launched", "message": ""}])
    conds = Conditions.of(obj, now=T0)
    conds.set_false("Launched", reason="Gone")
    conds.remove("Launched")
    assert obj["status"]["conditions"][0]["status"] == "True"
    assert conds.differs_from(obj)
    assert not Conditions.of(obj, now=T0).differs_from(obj)


def test_bad_status_is_refused_naming_the_condition() -> None:
    with pytest.raises(ValueError, match="condition X: status must be True, False or Unknown"):
        Conditions(now=T0).set("X", "Yes")


def test_root_follows_the_dependents_as_karpenter_reports_it() -> None:
    items: list[dict[str, Any]] = []
    conds = Conditions(items, now=T0, dependents=DEPS)
    conds.set_true("Launched")
    conds.compute_root()
    assert conds.get("Initialized")["message"] == "object is awaiting reconciliation"
    ready = conds.get("Ready")
    assert (ready["status"], ready["reason"]) == ("Unknown", "UnhealthyDependents")
    assert ready["message"] == "Registered=Unknown, Initialized=Unknown"
    conds.set_false("Registered", reason="MultipleNodesFound")
    conds.compute_root()
    assert (conds.get("Ready")["status"], conds.get("Ready")["message"]) == (
        "False",
        "Registered=False, Initialized=Unknown",
    )
    conds.set_true("Registered")
    conds.set_true("Initialized")
    assert conds.compute_root()
    assert conds.get("Ready")["reason"] == "Ready"
    assert not conds.compute_root()
    # Edited in place, in the order the conditions first appeared.
    assert [c["type"] for c in items] == ["Launched", "Registered", "Initialized", "Ready"]


def test_same_conditions_ignores_order() -> None:
    a = [{"type": "A", "status": "True"}, {"type": "B", "status": "False"}]
    assert same_conditions(a, list(reversed(a)))
    assert not same_conditions(a, a[:1])
