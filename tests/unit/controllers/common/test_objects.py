"""Timestamps and spec durations on raw NodeClaim dicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from karpy.apis.objects import format_time, parse_time
from karpy.controllers.common.objects import (
    expire_after,
    grace_period,
    termination_deadline,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def claim(conditions: list[dict[str, object]] | None = None, generation: int = 1) -> dict:
    return {
        "metadata": {"name": "c", "generation": generation},
        "spec": {},
        "status": {"conditions": conditions or []},
    }


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
