"""operatorpkg's status-condition and termination metrics: the transition bookkeeping of one
kind, read back through its own registry's exposition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from karpy.controllers.metrics.conditions import ConditionTracker, conditions_of

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(kind: str, status: str, since: float, reason: str = "") -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason or kind,
        "lastTransitionTime": _iso(since),
    }


def _obj(name: str, *conds: dict[str, str], deleting: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting is not None:
        meta["deletionTimestamp"] = _iso(deleting)
    return {"metadata": meta, "status": {"conditions": list(conds)}}


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def reg() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def tracker(reg: CollectorRegistry, clock: Clock) -> ConditionTracker:
    return ConditionTracker("nodeclaim", registry=reg, now=clock)


def value(reg: CollectorRegistry, metric: str, /, **labels: str) -> float | None:
    return reg.get_sample_value(metric, labels)


def series(reg: CollectorRegistry, name: str) -> list[dict[str, str]]:
    return [s.labels for family in reg.collect() for s in family.samples if s.name == name]


def test_conditions_are_read_by_type_with_their_transition_time() -> None:
    got = conditions_of(_obj("a", _cond("Ready", "True", T0), {"type": "", "status": "True"}))
    assert list(got) == ["Ready"]
    assert got["Ready"].status == "True" and got["Ready"].since == T0
    assert conditions_of({"metadata": {"name": "a"}}) == {}


def test_first_sight_counts_a_transition_per_condition_and_times_nothing(
    tracker: ConditionTracker, reg: CollectorRegistry, clock: Clock
) -> None:
    clock.t = T0 + 30
    tracker.observe(_obj("a", _cond("Launched", "Unknown", T0), _cond("Ready", "Unknown", T0)))

    name = "operator_nodeclaim_status_condition_transitions_total"
    assert value(reg, name, type="Launched", status="Unknown", reason="Launched") == 1
    assert value(reg, name, type="Ready", status="Unknown", reason="Ready") == 1
    assert series(reg, "operator_nodeclaim_status_condition_transition_seconds_count") == []
    labels = {"namespace": "", "name": "a", "type": "Ready", "status": "Unknown"}
    assert value(reg, "operator_nodeclaim_status_condition_count", reason="Ready", **labels) == 1
    current = "operator_nodeclaim_status_condition_current_status_seconds"
    assert value(reg, current, reason="Ready", **labels) == 30


def test_a_status_change_counts_once_times_the_left_status_and_moves_the_gauges(
    tracker: ConditionTracker, reg: CollectorRegistry, clock: Clock
) -> None:
    tracker.observe(_obj("a", _cond("Launched", "Unknown", T0), _cond("Ready", "Unknown", T0)))
    tracker.observe(_obj("a", _cond("Launched", "True", T0 + 40), _cond("Ready", "Unknown", T0)))
    # the same status seen again (another write to the object) is no transition
    tracker.observe(_obj("a", _cond("Launched", "True", T0 + 40), _cond("Ready", "Unknown", T0)))

    name = "operator_nodeclaim_status_condition_transitions_total"
    assert value(reg, name, type="Launched", status="True", reason="Launched") == 1
    assert value(reg, name, type="Ready", status="Unknown", reason="Ready") == 1
    hist = "operator_nodeclaim_status_condition_transition_seconds"
    assert value(reg, f"{hist}_count", type="Launched", status="Unknown") == 1
    assert value(reg, f"{hist}_sum", type="Launched", status="Unknown") == 40
    assert value(reg, f"{hist}_bucket", type="Launched", status="Unknown", le="10.0") == 0
    assert value(reg, f"{hist}_bucket", type="Launched", status="Unknown", le="+Inf") == 1
    assert value(reg, f"{hist}_count", type="Ready", status="Unknown") is None

    counts = {
        (s["type"], s["status"]) for s in series(reg, "operator_nodeclaim_status_condition_count")
    }
    assert counts == {("Launched", "True"), ("Ready", "Unknown")}  # the old series is gone


def test_a_removed_condition_loses_its_series_and_a_reason_change_replaces_its_series(
    tracker: ConditionTracker, reg: CollectorRegistry
) -> None:
    tracker.observe(_obj("a", _cond("Drifted", "True", T0, "A"), _cond("Ready", "True", T0)))
    tracker.observe(_obj("a", _cond("Ready", "True", T0, "Other")))

    counts = [
        (s["type"], s["reason"]) for s in series(reg, "operator_nodeclaim_status_condition_count")
    ]
    assert counts == [("Ready", "Other")]
    # neither is a status transition
    name = "operator_nodeclaim_status_condition_transitions_total"
    assert value(reg, name, type="Ready", status="True", reason="Other") is None


def test_termination_is_reported_while_terminating_and_timed_when_gone(
    tracker: ConditionTracker, reg: CollectorRegistry, clock: Clock
) -> None:
    tracker.observe(_obj("a", _cond("Ready", "True", T0)))
    tracker.observe(_obj("b", _cond("Ready", "True", T0)))
    assert series(reg, "operator_nodeclaim_termination_current_time_seconds") == []

    clock.t = T0 + 100
    tracker.observe(_obj("a", _cond("Ready", "True", T0), deleting=T0 + 90))
    current = "operator_nodeclaim_termination_current_time_seconds"
    assert value(reg, current, namespace="", name="a") == 10
    clock.t = T0 + 115
    assert value(reg, current, namespace="", name="a") == 25  # computed when scraped

    # the delete event's last state may no longer carry what was seen: the remembered
    # deletion time counts
    clock.t = T0 + 125
    tracker.forget(_obj("a"))
    assert value(reg, "operator_nodeclaim_termination_duration_seconds_count") == 1
    assert value(reg, "operator_nodeclaim_termination_duration_seconds_sum") == 35
    assert series(reg, current) == []
    names = {s["name"] for s in series(reg, "operator_nodeclaim_status_condition_count")}
    assert names == {"b"}

    # an object never seen terminating is not timed
    tracker.forget(_obj("b"))
    assert value(reg, "operator_nodeclaim_termination_duration_seconds_count") == 1
    assert series(reg, "operator_nodeclaim_status_condition_count") == []
    assert len(tracker) == 0
