"""Condition bookkeeping and timestamps on raw NodeClaim dicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from karpy.apis.objects import format_time, parse_time
from karpy.controllers.nodeclaim.termination.objects import (
    expire_after,
    grace_period,
    termination_deadline,
    with_condition,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def claim(conditions: list[dict[str, object]] | None = None, generation: int = 1) -> dict:
    return {
        "metadata": {"name": "c", "generation": generation},
        "spec": {},
        "status": {"conditions": conditions or []},
    }


def test_a_new_condition_is_added_with_its_transition_time() -> None:
    out = with_condition(claim(), type_="Drained", status="True", now=NOW)
    assert out == [
        {
            "type": "Drained",
            "status": "True",
            "reason": "Drained",
            "message": "",
            "lastTransitionTime": "2026-03-01T12:00:00Z",
            "observedGeneration": 1,
        }
    ]


def test_an_unchanged_condition_is_not_rewritten() -> None:
    first = with_condition(claim(), type_="Drained", status="Unknown", reason="Draining", now=NOW)
    assert first is not None
    again = with_condition(
        claim(first), type_="Drained", status="Unknown", reason="Draining", now=NOW
    )
    assert again is None


def test_the_transition_time_moves_only_with_the_status() -> None:
    first = with_condition(
        claim(), type_="VolumesDetached", status="Unknown", reason="A", message="A", now=NOW
    )
    assert first is not None
    later = NOW + timedelta(minutes=5)
    reworded = with_condition(
        claim(first), type_="VolumesDetached", status="Unknown", reason="B", message="B", now=later
    )
    assert reworded is not None
    assert reworded[0]["lastTransitionTime"] == "2026-03-01T12:00:00Z"
    assert reworded[0]["reason"] == "B"
    flipped = with_condition(claim(reworded), type_="VolumesDetached", status="True", now=later)
    assert flipped is not None
    assert flipped[0]["lastTransitionTime"] == "2026-03-01T12:05:00Z"
    assert flipped[0]["reason"] == "VolumesDetached"


def test_other_conditions_are_kept() -> None:
    launched = {"type": "Launched", "status": "True", "lastTransitionTime": "x", "reason": "L"}
    out = with_condition(claim([launched]), type_="Drained", status="True", now=NOW)
    assert out is not None
    assert out[0] == launched
    assert [c["type"] for c in out] == ["Launched", "Drained"]


def test_timestamps_round_trip_and_bad_ones_read_as_absent() -> None:
    assert parse_time(format_time(NOW)) == NOW
    assert parse_time("not a time") is None
    assert parse_time(None) is None
    assert parse_time("2026-03-01T12:00:00") == NOW  # no zone: UTC


def test_spec_durations_and_the_termination_deadline() -> None:
    obj = {
        "metadata": {
            "annotations": {"karpenter.sh/nodeclaim-termination-timestamp": format_time(NOW)}
        },
        "spec": {"terminationGracePeriod": "1h30m", "expireAfter": "Never"},
    }
    assert grace_period(obj) == timedelta(hours=1, minutes=30)
    assert expire_after(obj) is None
    assert termination_deadline(obj) == NOW
    assert expire_after({"spec": {"expireAfter": "720h"}}) == timedelta(hours=720)
    assert grace_period({"spec": {}}) is None
