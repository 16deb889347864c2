"""The pieces of Go's hashstructure and the Go parsers it relies on, against values printed by
Go 1.26 (`hash/fnv`, `time.ParseDuration`)."""

from __future__ import annotations

import pytest

from karpy.apis import hashstructure as hs


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0xCBF29CE484222325), ("a", 0xAF63BD4C8601B7BE), ("foobar", 0x340D8765A4DDA9C2)],
)
def test_strings_hash_with_fnv1_64(text: str, expected: int) -> None:
    assert hs.string(text) == expected


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("1h30m", 5_400_000_000_000),
        ("1.5h", 5_400_000_000_000),
        ("300ms", 300_000_000),
        ("-1m", -60_000_000_000),
        ("0", 0),
        ("1.s", 1_000_000_000),
        ("2h45m0.5s", 9_900_500_000_000),
        ("1.0000000001s", 1_000_000_000),
        ("0.333333333333333333333h", 1_200_000_000_000),
        ("9223372036854775807ns", 2**63 - 1),
        ("-9223372036854775808ns", -(2**63)),
        ("+5\u00b5s", 5_000),
        ("2562047h47m16.854775807s", 2**63 - 1),
    ],
)
def test_durations_parse_as_go_does(text: str, nanos: int) -> None:
    assert hs.parse_go_duration(text) == nanos


@pytest.mark.parametrize(
    "text", ["", "1", "1x", ".s", "h", "9223372036854775808ns", "2562048h", "Never"]
)
def test_durations_go_rejects_are_rejected(text: str) -> None:
    with pytest.raises(hs.GoValueError):
        hs.parse_go_duration(text)


def test_times_are_instants_with_nanoseconds() -> None:
    utc = hs.parse_go_time("2024-05-06T07:08:09.123456789Z")
    assert utc == hs.parse_go_time("2024-05-06T09:08:09.123456789+02:00")
    assert utc[1] == 123_456_789
    assert hs.parse_go_time("0001-01-01T00:00:00Z") == (0, 0)
    with pytest.raises(hs.GoValueError):
        hs.parse_go_time("2024-02-30T00:00:00Z")


def test_struct_fields_are_ordered_and_zero_fields_skipped() -> None:
    a, b = hs.string("a"), hs.string("b")
    assert hs.struct_of("T", [("X", a), ("Y", None)]) == hs.struct_of("T", [("X", a)])
    assert hs.struct_of("T", [("X", a), ("Y", b)]) != hs.struct_of("T", [("Y", b), ("X", a)])
    assert hs.struct_of("T", []) == hs.string("T")


def test_sets_ignore_order_and_cancel_pairs() -> None:
    a, b = hs.string("a"), hs.string("b")
    assert hs.set_of([a, b]) == hs.set_of([b, a])
    assert hs.set_of([a, b, b]) == hs.set_of([a])
    assert hs.set_of([]) == 0
    assert hs.mapping({}) != 0
    assert hs.mapping({"k": "v", "x": "y"}) == hs.mapping({"x": "y", "k": "v"})
