"""Go-style durations as they appear in Karpenter manifests."""

from __future__ import annotations

from datetime import timedelta

import pytest

from karpy.apis.duration import (
    DurationError,
    format_duration,
    parse_duration,
    parse_nillable_duration,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("720h", timedelta(days=30)),
        ("2h45m0s", timedelta(hours=2, minutes=45)),
        ("1.5h", timedelta(minutes=90)),
        ("300ms", timedelta(milliseconds=300)),
        ("1m30.5s", timedelta(seconds=90.5)),
        ("10us", timedelta(microseconds=10)),
        ("10µs", timedelta(microseconds=10)),
        ("0", timedelta(0)),
        ("0s", timedelta(0)),
        ("-5m", timedelta(minutes=-5)),
        ("+5m", timedelta(minutes=5)),
    ],
)
def test_parse_go_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "1d", "h", "1h30", "30 s", "Never", ".s", "-"])
def test_reject_what_go_rejects(text: str) -> None:
    with pytest.raises(DurationError, match="invalid duration"):
        parse_duration(text)


def test_not_a_string() -> None:
    with pytest.raises(DurationError, match="must be a string"):
        parse_duration(30)  # type: ignore[arg-type]


def test_never_means_no_limit() -> None:
    assert parse_nillable_duration("Never") is None
    assert parse_nillable_duration("720h") == timedelta(hours=720)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(hours=720), "720h0m0s"),
        (timedelta(minutes=1, seconds=30), "1m30s"),
        (timedelta(seconds=30), "30s"),
        (timedelta(seconds=1.5), "1.5s"),
        (timedelta(milliseconds=300), "300ms"),
        (timedelta(microseconds=7), "7µs"),
        (timedelta(0), "0s"),
        (timedelta(minutes=-5), "-5m0s"),
        (None, "Never"),
    ],
)
def test_format_like_go(value: timedelta | None, text: str) -> None:
    assert format_duration(value) == text
    if value is not None:
        assert parse_duration(text) == value
