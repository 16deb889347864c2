"""The orchestration queue's command timeout scales with the candidates in flight, as
Karpenter's: 80 ms each, never under 10 minutes nor over an hour."""

from __future__ import annotations

import pytest

from karpy.controllers.disruption.orchestration import command_timeout


@pytest.mark.parametrize(
    ("queued", "seconds"),
    [(0, 600.0), (1, 600.0), (7_500, 600.0), (10_000, 800.0), (45_000, 3600.0), (10**6, 3600.0)],
)
def test_timeout_is_80ms_per_queued_candidate_between_ten_minutes_and_an_hour(
    queued: int, seconds: float
) -> None:
    assert command_timeout(queued) == pytest.approx(seconds)


def test_a_lower_floor_still_scales_and_a_floor_above_the_ceiling_wins() -> None:
    assert command_timeout(100, floor=0.0) == pytest.approx(8.0)
    assert command_timeout(0, floor=0.0) == 0.0
    assert command_timeout(10, floor=7200.0) == 7200.0
