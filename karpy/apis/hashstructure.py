"""The hash of Go's `mitchellh/hashstructure` v2 (`FormatV2`), built up value by value.

Karpenter's NodePool and EC2NodeClass hashes are that library's hash of a Go value; to give the
same numbers we combine the same 64-bit pieces in the same way (`controllers/nodepool/hash.py`
and `cloudprovider/aws/nodeclasshash.py` walk the Go fields):

- every piece is FNV-1 (64-bit, not 1a) of some bytes: a string's UTF-8 bytes, an integer's
  little-endian bytes at its Go size (`int`/`int64` 8, `int32` 4, a `bool` 1), a `time.Time`'s
  `MarshalBinary` form;
- a pair in order (a struct field, a map entry) is FNV-1 of the two hashes, little-endian;
- a struct starts from the hash of its Go type name and mixes in each non-zero field with XOR,
  hardening the running value after each field (FNV-1 of it);
- a map is the XOR of its entries, hardened once; a slice hashed as a set (`SlicesAsSets`) is
  the bare XOR of its items (so a duplicate item cancels out, and an empty slice is 0).

Also here: Go's `time.ParseDuration` and `metav1.Time` parsing, since the hash sees the parsed
values (nanoseconds, instants), not the strings written in the manifest.
"""

from __future__ import annotations

import calendar
import re
import struct
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Final

__all__ = [
    "GoValueError",
    "boolean",
    "int32",
    "int64",
    "mapping",
    "ordered",
    "parse_go_duration",
    "parse_go_time",
    "set_of",
    "string",
    "struct_of",
    "time_value",
]

_MASK: Final = 2**64 - 1
_FNV64_OFFSET: Final = 0xCBF29CE484222325
_FNV64_PRIME: Final = 0x100000001B3


class GoValueError(ValueError):
    """A string that Go would refuse to decode into the field's type."""


def _fnv1(data: bytes) -> int:
    h = _FNV64_OFFSET
    for byte in data:
        h = ((h * _FNV64_PRIME) & _MASK) ^ byte
    return h


def string(value: str) -> int:
    return _fnv1(value.encode())


def int64(value: int) -> int:
    return _fnv1(struct.pack("<q", value))


def int32(value: int) -> int:
    return _fnv1(struct.pack("<i", value))


def boolean(value: bool) -> int:
    """A `bool`, which the library hashes as an `int8` 0 or 1."""
    return _fnv1(b"\x01" if value else b"\x00")


def ordered(a: int, b: int) -> int:
    return _fnv1(struct.pack("<QQ", a, b))


def _harden(h: int) -> int:
    return _fnv1(struct.pack("<Q", h))


def struct_of(type_name: str, fields: Iterable[tuple[str, int | None]]) -> int:
    """A struct: `fields` are (Go field name, hash) in declaration order; None is a zero value
    (skipped, as `IgnoreZeroValue` does)."""
    h = string(type_name)
    for name, value in fields:
        if value is not None:
            h = _harden(h ^ ordered(string(name), value))
    return h


def mapping(entries: Mapping[str, str]) -> int:
    """A `map[string]string`."""
    h = 0
    for key, value in entries.items():
        h ^= ordered(string(key), string(value))
    return _harden(h)


def set_of(items: Iterable[int]) -> int:
    """A slice under `SlicesAsSets` (no `set` tag): XOR only, without hardening."""
    h = 0
    for item in items:
        h ^= item
    return h


# --- time.ParseDuration ----------------------------------------------------------------------

_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_TERM: Final = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_MAX: Final = 1 << 63


def parse_go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string, as `time.ParseDuration` reads it."""
    body = text
    negative = False
    if body[:1] in ("-", "+"):
        negative = body[0] == "-"
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise GoValueError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(body):
        match = _TERM.match(body, pos)
        assert match is not None  # every part of the pattern may be empty
        whole, fraction, unit_name = match.groups()
        if not whole and not fraction:
            raise GoValueError(f"invalid duration {text!r}")
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise GoValueError(f"unknown or missing unit in duration {text!r}")
        value = int(whole or "0")
        if value > _MAX // unit:
            raise GoValueError(f"duration {text!r} overflows int64")
        value *= unit
        digits, scale = _fraction(fraction or "")
        if digits > 0:
            value += int(float(digits) * (float(unit) / scale))
        total += value
        if value > _MAX or total > _MAX:
            raise GoValueError(f"duration {text!r} overflows int64")
        pos = match.end()
    if negative:
        return -total
    if total > _MAX - 1:
        raise GoValueError(f"duration {text!r} overflows int64")
    return total


def _fraction(digits: str) -> tuple[int, float]:
    """Go's `leadingFraction`: the digits that fit in int64, and 10**(their count)."""
    value, scale = 0, 1.0
    for char in digits:
        following = value * 10 + int(char)
        if value > (_MAX - 1) // 10 or following > _MAX:
            break
        value, scale = following, scale * 10
    return value, scale


# --- metav1.Time -----------------------------------------------------------------------------

_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})"
)
# Seconds from 0001-01-01 (Go's internal epoch) to 1970-01-01.
_UNIX_TO_INTERNAL: Final = 62_135_596_800


def parse_go_time(text: str) -> tuple[int, int]:
    """(seconds since 0001-01-01 UTC, nanoseconds) of an RFC 3339 timestamp."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise GoValueError(f"invalid RFC 3339 time {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7) or "", match.group(8)
    offset = 0
    if zone not in ("Z", "z"):
        sign = -1 if zone[0] == "-" else 1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    try:
        unix = calendar.timegm(datetime(year, month, day, hour, minute, second).timetuple())
    except ValueError as err:
        raise GoValueError(f"invalid RFC 3339 time {text!r}") from err
    nanos = int((fraction + "000000000")[:9])
    return unix - offset + _UNIX_TO_INTERNAL, nanos


def time_value(seconds: int, nanos: int) -> int:
    """A `time.Time` in a zone at UTC+0 other than Go's `time.UTC` (Karpenter decodes API
    times with `.Local()`, and its container runs in UTC): `MarshalBinary` version 1 with a
    zero offset in minutes."""
    return _fnv1(struct.pack(">BqiH", 1, seconds, nanos, 0))
