"""The kwok "stage" conventions Karpenter's kwok provider and e2e tests rely on, honoured by
karpy's simulator.

People test Karpenter with kwok, whose stages script what its fake kubelets do. Two of their
conventions change what a test observes, and the simulator follows them (a deleted pod with
neither stays Terminating for its grace period, until its deletionTimestamp, as under a
kubelet and kwok's default `pod-delete` stage):

- `pod-delete.stage.kwok.x-k8s.io/delay: <duration>` on a pod: once the pod is deleted, its
  deletion is finished only after that delay (a Go duration such as `30s` or `1m30s`), counted
  from the deletion request; a pod stays Terminating that long, as one whose containers take
  time to stop;
- `kwok.x-k8s.io/stage: unhealthy` as a label: a pod is never marked Ready (it runs, but its
  readiness never passes), and a Node keeps whatever conditions a test wrote instead of being
  made Ready again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from karpy.apis.objects import parse_time

__all__ = [
    "LABEL_STAGE",
    "POD_DELETE_DELAY_ANNOTATION",
    "STAGE_UNHEALTHY",
    "DurationError",
    "deletion_finishes_at",
    "is_unhealthy",
    "parse_go_duration",
]

LABEL_STAGE: Final = "kwok.x-k8s.io/stage"
STAGE_UNHEALTHY: Final = "unhealthy"
POD_DELETE_DELAY_ANNOTATION: Final = "pod-delete.stage.kwok.x-k8s.io/delay"

_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_TERM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """Text is not a Go duration."""


def parse_go_duration(text: str) -> timedelta:
    """A Go `time.ParseDuration` string (`300ms`, `1.5s`, `1h2m`, `0`) as a timedelta."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    body = body.lstrip("+-")
    if body == "0":
        return timedelta(0)
    seconds = 0.0
    pos = 0
    while pos < len(body):
        match = _TERM.match(body, pos)
        if match is None:
            raise DurationError(f"{text!r} is not a duration (e.g. 30s, 1m30s, 500ms)")
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos == 0:
        raise DurationError(f"{text!r} is not a duration (e.g. 30s, 1m30s, 500ms)")
    return timedelta(seconds=sign * seconds)


def is_unhealthy(obj: Mapping[str, Any]) -> bool:
    """True for a pod or Node labelled into kwok's `unhealthy` stage."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_STAGE) == STAGE_UNHEALTHY


def deletion_finishes_at(pod: Mapping[str, Any]) -> datetime | None:
    """When a terminating pod's deletion should be finished: with a delete-delay annotation,
    the deletion request (its deletionTimestamp less its grace period) plus the delay; without
    one, its deletionTimestamp, which the API server sets to the request plus the grace period
    (the time a kubelet gives preStop hooks and containers to stop). None for a pod that is not
    terminating. Raises `DurationError` for a malformed delay."""
    meta = pod.get("metadata") or {}
    delay_text = (meta.get("annotations") or {}).get(POD_DELETE_DELAY_ANNOTATION)
    deleting = parse_time(meta.get("deletionTimestamp"))
    if deleting is None:
        return None
    if not delay_text:
        return deleting
    delay = parse_go_duration(str(delay_text))
    grace = meta.get("deletionGracePeriodSeconds")
    requested = deleting - timedelta(seconds=int(grace) if isinstance(grace, int) else 0)
    return requested + delay
