"""Disruption budgets: when they are active and how many nodes they allow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from karpy.apis.v1 import UNBOUNDED, Budget, NodePool
from tests.unit.apis.apis_invalid_cases import nodepool

MONDAY_10 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday


def test_budget_without_schedule_is_always_active() -> None:
    assert Budget().is_active(MONDAY_10)


@pytest.mark.parametrize(
    ("now", "active"),
    [
        (datetime(2026, 11, 30, 8, 59, tzinfo=UTC), False),
        (datetime(2026, 11, 30, 9, 0, tzinfo=UTC), True),
        (datetime(2026, 11, 30, 16, 59, tzinfo=UTC), True),
        (datetime(2026, 11, 30, 17, 0, tzinfo=UTC), False),  # as Go's cron: hits after 9:00
        (datetime(2026, 11, 30, 17, 1, tzinfo=UTC), False),
        (datetime(2026, 11, 29, 10, 0, tzinfo=UTC), False),  # Sunday
    ],
)
def test_scheduled_budget_is_active_for_its_duration(now: datetime, active: bool) -> None:
    budget = Budget(nodes="0", schedule="0 9 * * mon-fri", duration="8h")
    assert budget.is_active(now) is active


def test_schedule_is_utc() -> None:
    budget = Budget(nodes="0", schedule="0 9 * * *", duration="1h")
    nine_utc_in_paris = datetime(2026, 11, 30, 10, 30, tzinfo=timezone(timedelta(hours=1)))
    assert budget.is_active(nine_utc_in_paris)
    assert budget.is_active(datetime(2026, 11, 30, 9, 30))  # naive means UTC


def test_macro_schedules() -> None:
    budget = Budget(nodes="0", schedule="@daily", duration="1h30m")
    assert budget.is_active(datetime(2026, 11, 30, 1, 29, tzinfo=UTC))
    assert not budget.is_active(datetime(2026, 11, 30, 1, 31, tzinfo=UTC))


@pytest.mark.parametrize(
    ("nodes", "count", "allowed"),
    [("10%", 10, 1), ("10%", 11, 2), ("10%", 0, 0), ("100%", 7, 7), ("0%", 7, 0), ("5", 3, 5)],
)
def test_allowed_disruptions_round_percentages_up(nodes: str, count: int, allowed: int) -> None:
    assert Budget(nodes=nodes).allowed_disruptions(MONDAY_10, count) == allowed


def test_inactive_budget_allows_unbounded() -> None:
    budget = Budget(nodes="0", schedule="0 0 1 1 *", duration="1h")
    assert budget.allowed_disruptions(MONDAY_10, 10) == UNBOUNDED


def test_malformed_schedule_fails_closed() -> None:
    budget = Budget(nodes="5", schedule="not a cron at all", duration="1h")
    assert budget.allowed_disruptions(MONDAY_10, 10) == 0


def _pool(budgets: list[dict[str, object]]) -> NodePool:
    obj = nodepool()
    obj["spec"]["disruption"]["budgets"] = budgets
    return NodePool.model_validate(obj)


def test_nodepool_takes_the_most_restrictive_budget_for_a_reason() -> None:
    pool = _pool(
        [
            {"nodes": "20%"},
            {"nodes": "1", "reasons": ["Drifted"]},
            {"nodes": "0", "reasons": ["Underutilized"], "schedule": "0 9 * * *", "duration": "8h"},
        ]
    )
    assert pool.allowed_disruptions(now=MONDAY_10, num_nodes=20, reason="Empty") == 4
    assert pool.allowed_disruptions(now=MONDAY_10, num_nodes=20, reason="Drifted") == 1
    assert pool.allowed_disruptions(now=MONDAY_10, num_nodes=20, reason="Underutilized") == 0
    evening = MONDAY_10.replace(hour=20)
    assert pool.allowed_disruptions(now=evening, num_nodes=20, reason="Underutilized") == 4
    assert [b.nodes for b in pool.budgets_for("Drifted")] == ["20%", "1"]


def test_nodepool_without_matching_budgets_is_unbounded() -> None:
    pool = _pool([{"nodes": "1", "reasons": ["Drifted"]}])
    assert pool.allowed_disruptions(now=MONDAY_10, num_nodes=5, reason="Empty") == UNBOUNDED


@pytest.mark.parametrize(
    ("now", "opens", "closes"),
    [
        # before Monday's window: the next one
        (datetime(2026, 11, 30, 8, 0, tzinfo=UTC), (11, 30, 9), (11, 30, 17)),
        # inside it: the one that holds now
        (datetime(2026, 11, 30, 16, 59, tzinfo=UTC), (11, 30, 9), (11, 30, 17)),
        # at its close (not active any more) and on Saturday: the next working day's
        (datetime(2026, 11, 30, 17, 0, tzinfo=UTC), (12, 1, 9), (12, 1, 17)),
        (datetime(2026, 12, 5, 12, 0, tzinfo=UTC), (12, 7, 9), (12, 7, 17)),
    ],
)
def test_window_is_the_one_open_now_or_the_next(
    now: datetime, opens: tuple[int, int, int], closes: tuple[int, int, int]
) -> None:
    budget = Budget(nodes="0", schedule="0 9 * * mon-fri", duration="8h")
    window = budget.window(now)
    assert window == (
        datetime(2026, *opens, tzinfo=UTC),
        datetime(2026, *closes, tzinfo=UTC),
    )
    assert budget.is_active(now) is (window[0] <= now)


def test_overlapping_hits_extend_the_window_or_keep_it_open() -> None:
    # hourly hits, 90 minutes each, from 9 to 11: one window from 9:00 to 12:30
    budget = Budget(nodes="0", schedule="0 9-11 * * *", duration="1h30m")
    assert budget.window(MONDAY_10) == (
        datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        datetime(2026, 11, 30, 12, 30, tzinfo=UTC),
    )
    # every minute for an hour, or back to back: it never closes
    for schedule, duration in (("* * * * *", "1h"), ("*/30 * * * *", "30m")):
        window = Budget(nodes="0", schedule=schedule, duration=duration).window(MONDAY_10)
        assert window is not None and window[1] is None, schedule


def test_window_of_unscheduled_budget_is_none() -> None:
    assert Budget(nodes="1").window(MONDAY_10) is None
