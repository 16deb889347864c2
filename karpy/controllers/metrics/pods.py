"""Karpenter's pod timing metrics, kept by watching the pods the informer cache holds.

Durations (observed once per pod): `karpenter_pods_bound_duration_seconds` (creation to
`PodScheduled`), `karpenter_pods_startup_duration_seconds` (creation to `Ready`), and their
`karpenter_pods_provisioning_*` forms measured from when karpy first saw the pod unbound (like
Karpenter's, a point in memory). Only pods karpy could have seen pending are observed: those
created after it started leading, or seen unbound since. Gauges (per pod, while it lasts):
`karpenter_pods_unbound_time_seconds`, `_unstarted_time_seconds` and their provisioning forms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from prometheus_client import Gauge, Histogram

from karpy.controllers.metrics.upstream import DURATION_BUCKETS, KARPENTER_METRICS
from karpy.kube.metrics import REGISTRY, QuantileSummary

__all__ = ["PodTimings"]

_HELP: Final = {m.name: m.help for m in KARPENTER_METRICS}
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})


def _summary(name: str) -> QuantileSummary:
    return QuantileSummary(name, _HELP[name], registry=REGISTRY)


def _histogram(name: str) -> Histogram:
    return Histogram(name, _HELP[name], buckets=DURATION_BUCKETS, registry=REGISTRY)


def _gauge(name: str) -> Gauge:
    return Gauge(name, _HELP[name], ["name", "namespace"], registry=REGISTRY)


STARTUP_DURATION: Final = _summary("karpenter_pods_startup_duration_seconds")
BOUND_DURATION: Final = _histogram("karpenter_pods_bound_duration_seconds")
PROVISIONING_BOUND_DURATION: Final = _histogram(
    "karpenter_pods_provisioning_bound_duration_seconds"
)
PROVISIONING_STARTUP_DURATION: Final = _histogram(
    "karpenter_pods_provisioning_startup_duration_seconds"
)
# Registered for parity; karpy's provisioner does not time its first decision per pod yet.
SCHEDULING_DECISION_DURATION: Final = _histogram(
    "karpenter_pods_scheduling_decision_duration_seconds"
)
UNBOUND_TIME: Final = _gauge("karpenter_pods_unbound_time_seconds")
UNSTARTED_TIME: Final = _gauge("karpenter_pods_unstarted_time_seconds")
PROVISIONING_UNBOUND_TIME: Final = _gauge("karpenter_pods_provisioning_unbound_time_seconds")
PROVISIONING_UNSTARTED_TIME: Final = _gauge("karpenter_pods_provisioning_unstarted_time_seconds")
SCHEDULING_UNDECIDED_TIME: Final = _gauge(
    "karpenter_pods_provisioning_scheduling_undecided_time_seconds"
)
_PER_POD: Final = (
    UNBOUND_TIME,
    UNSTARTED_TIME,
    PROVISIONING_UNBOUND_TIME,
    PROVISIONING_UNSTARTED_TIME,
)


def _time(raw: object) -> float | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _condition_time(pod: Mapping[str, Any], kind: str, now: float) -> float | None:
    """When the condition turned True; `now` when the cache trimmed the transition time
    away (the informer keeps only type, status and reason), which the 1 s refresh bounds."""
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind and c.get("status") == "True":
            return _time(c.get("lastTransitionTime")) or now
    return None


class PodTimings:
    """Remembers, per pod, when karpy first saw it unbound and which durations it observed."""

    def __init__(self, *, since: float) -> None:
        self.since = since
        self.first_seen: dict[str, float] = {}
        self.bound: set[str] = set()
        self.started: set[str] = set()

    def update(self, pods: Iterable[Mapping[str, Any]], now: float) -> None:
        """Observe what changed since the last call and refresh the per-pod gauges."""
        for gauge in _PER_POD:
            gauge.clear()
        present: set[str] = set()
        for pod in pods:
            meta = pod.get("metadata") or {}
            name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
            key = f"{namespace}/{name}"
            present.add(key)
            created = _time(meta.get("creationTimestamp"))
            status = pod.get("status") or {}
            if created is None or status.get("phase") in _TERMINAL:
                continue
            unbound = not (pod.get("spec") or {}).get("nodeName")
            if unbound:
                self.first_seen.setdefault(key, now)
            seen = self.first_seen.get(key)
            self._observe(pod, key, created, seen, now)
            if unbound:
                UNBOUND_TIME.labels(name, namespace).set(now - created)
                if seen is not None:
                    PROVISIONING_UNBOUND_TIME.labels(name, namespace).set(now - seen)
            if status.get("phase") != "Running":
                UNSTARTED_TIME.labels(name, namespace).set(now - created)
                if seen is not None:
                    PROVISIONING_UNSTARTED_TIME.labels(name, namespace).set(now - seen)
        for gone in set(self.first_seen) - present:
            del self.first_seen[gone]
        self.bound &= present
        self.started &= present

    def _observe(
        self, pod: Mapping[str, Any], key: str, created: float, seen: float | None, now: float
    ) -> None:
        if seen is None and created < self.since:
            return  # running before karpy led: it never saw the pod pending
        scheduled = _condition_time(pod, "PodScheduled", now)
        if scheduled is not None and key not in self.bound:
            self.bound.add(key)
            BOUND_DURATION.observe(max(scheduled - created, 0.0))
            if seen is not None:
                PROVISIONING_BOUND_DURATION.observe(max(scheduled - seen, 0.0))
        ready = _condition_time(pod, "Ready", now)
        if ready is not None and key not in self.started:
            self.started.add(key)
            STARTUP_DURATION.observe(max(ready - created, 0.0))
            if seen is not None:
                PROVISIONING_STARTUP_DURATION.observe(max(ready - seen, 0.0))
