"""Go-style durations (`30s`, `1h30m`, `720h`, `Never`) as written in Karpenter manifests.

Karpenter's fields are Go `time.Duration`s, so manifests carry Go's notation; we parse the same
grammar (`time.ParseDuration`) so `1.5h`, `300ms` and `2h45m0s` mean what they mean to Go.
`Never` is Karpenter's `NillableDuration` for "no limit" and parses to `None`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Final

NEVER: Final = "Never"

_UNIT_MICROSECONDS: Final = {
    "ns": 0.001,
    "us": 1.0,
    "µs": 1.0,
    "μs": 1.0,
    "ms": 1_000.0,
    "s": 1_000_000.0,
    "m": 60_000_000.0,
    "h": 3_600_000_000.0,
}
_TERM = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """A string is not a Go duration."""


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration (`1h30m`, `-5s`, `1.5h`, `0`) into a timedelta."""
    if not isinstance(text, str):
        raise DurationError(f"duration must be a string, got {type(text).__name__}")
    body = text
    sign = 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return timedelta(0)
    if not body:
        raise DurationError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    while pos < len(body):
        match = _TERM.match(body, pos)
        if match is None or match.group(1) in ("", "."):
            raise DurationError(f"invalid duration {text!r}")
        total += float(match.group(1)) * _UNIT_MICROSECONDS[match.group(2)]
        pos = match.end()
    return timedelta(microseconds=sign * round(total))


def parse_nillable_duration(text: str) -> timedelta | None:
    """Parse a duration that may be `Never` (returned as None, meaning "no limit")."""
    if text == NEVER:
        return None
    return parse_duration(text)


def format_duration(value: timedelta | None) -> str:
    """Format like Go's `Duration.String()` (`720h0m0s`, `1m30s`, `0s`); None gives `Never`."""
    if value is None:
        return NEVER
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros == 0:
        return "0s"
    if micros < 1_000_000:
        if micros < 1_000:
            return f"{sign}{micros}µs"
        return f"{sign}{_trim(micros / 1_000)}ms"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = _trim(rest / 1_000_000)
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _trim(number: float) -> str:
    text = f"{number:.6f}".rstrip("0").rstrip(".")
    return text or "0"
