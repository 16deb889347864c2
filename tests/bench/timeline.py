"""Where a benchmark's seconds went: karpy's own log lines and the API objects' timestamps,
each phase as how many happened and when the first, the median and the last did, in seconds
after a start on the wall clock."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = ["condition_time", "log_events", "phase", "stamp"]

JSON = dict[str, Any]


def stamp(value: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (API objects, karpy's log)."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def log_events(lines: Iterable[str]) -> dict[str, list[tuple[float, JSON]]]:
    """karpy's JSON log lines by message, with their times."""
    out: dict[str, list[tuple[float, JSON]]] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        at = stamp(entry.get("time")) if isinstance(entry, dict) else None
        if at is not None:
            out.setdefault(str(entry.get("message")), []).append((at, entry))
    return out


def phase(times: Sequence[float | None], start: float) -> JSON:
    """{n, first, p50, last} of the times at or after `start`, in seconds after it."""
    after = sorted(t - start for t in times if t is not None and t >= start - 0.5)
    if not after:
        return {"n": 0}
    return {
        "n": len(after),
        "first": round(after[0], 1),
        "p50": round(after[len(after) // 2], 1),
        "last": round(after[-1], 1),
    }


def condition_time(obj: Mapping[str, Any], kind: str) -> float | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind and c.get("status") == "True":
            return stamp(c.get("lastTransitionTime"))
    return None
