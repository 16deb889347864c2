"""Quantities parse and print exactly as Kubernetes' apimachinery does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpy.scheduling.quantity import (
    MAX_UNITS,
    QuantityError,
    format_bytes,
    format_milli,
    milli_value,
    parse_quantity,
    value,
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1.5", "1500m"),
        ("1.5Gi", "1536Mi"),
        ("1Gi", "1Gi"),
        ("1024", "1024"),
        ("1024Mi", "1Gi"),
        ("1025Ki", "1025Ki"),
        ("0.5Ki", "512"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("100m", "100m"),
        ("0.1m", "100u"),
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("1E", "1E"),
        ("2e-3", "2e-3"),
        ("-1.5", "-1500m"),
        ("+2", "2"),
        (".5", "500m"),
        ("5.", "5"),
        ("0", "0"),
        ("0.0Gi", "0"),
        ("3100Mi", "3100Mi"),
        ("28Gi", "28Gi"),
    ],
)
def test_canonical_form(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


@pytest.mark.parametrize("text", ["", "abc", "1.5.5", "1Kb", "Mi", "1 Gi", "1e", "--1", "1i"])
def test_invalid_quantities_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_finer_than_nano_rounds_up() -> None:
    assert parse_quantity("0.0000000001").nanos == 1
    assert parse_quantity("1n").nanos == 1
    assert parse_quantity("-0.0000000001").nanos == -1


def test_milli_and_unit_values_round_up() -> None:
    assert milli_value("0.1m") == 1
    assert milli_value("1.5") == 1500
    assert milli_value("250m") == 250
    assert value("0.5") == 1
    assert value("1Ki") == 1024
    assert value("3100Mi") == 3100 * 1024**2
    assert milli_value(2) == 2000
    assert value(0.5) == 1


def test_values_are_capped_at_int64() -> None:
    assert value("1e100") == MAX_UNITS


def test_formatting_helpers() -> None:
    assert format_milli(1500) == "1500m"
    assert format_milli(2000) == "2"
    assert format_bytes(3100 * 1024**2) == "3100Mi"
    assert format_bytes(1000) == "1k"


_SUFFIXES = ["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "n", "u", "e3", "e-3", "E-6"]


@given(
    whole=st.integers(min_value=0, max_value=10**9),
    frac=st.one_of(st.just(""), st.integers(min_value=0, max_value=999_999).map(str)),
    suffix=st.sampled_from(_SUFFIXES),
    negative=st.booleans(),
)
def test_round_trip(whole: int, frac: str, suffix: str, negative: bool) -> None:
    text = ("-" if negative else "") + str(whole) + (f".{frac}" if frac else "") + suffix
    q = parse_quantity(text)
    printed = str(q)
    again = parse_quantity(printed)
    assert again.nanos == q.nanos
    assert str(again) == printed  # canonical form is a fixed point
