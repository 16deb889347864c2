"""operatorpkg's status-condition and termination metrics for NodePools, NodeClaims and Nodes.

Karpenter runs awslabs/operatorpkg's `status` controller for each of the three kinds; it
exports, per kind (`operator_<kind>_...`, kind in lower case):

- `status_condition_count{namespace,name,type,status,reason}`: 1 per condition of each object;
- `status_condition_current_status_seconds{...same}`: seconds since the condition's
  `lastTransitionTime`;
- `status_condition_transitions_total{type,status,reason}`: +1 whenever a condition is seen
  with a status other than the one last seen (or is seen for the first time), labelled by the
  new status and reason;
- `status_condition_transition_seconds{type,status}`: on such a change from a known status,
  the time spent in the old status (new `lastTransitionTime` minus the old one), labelled by
  the status being left;
- `termination_current_time_seconds{namespace,name}`: seconds since `deletionTimestamp`, while
  the object is terminating;
- `termination_duration_seconds`: on deletion of an object seen terminating, the seconds from
  its `deletionTimestamp` until it is gone.

Transitions are best effort, as upstream's: two writes between two observations count as one.
karpy feeds the bookkeeping from the shared informers' events (no relist, O(conditions) per
event) and computes the gauges when Prometheus scrapes, so they are always current and an
object's series vanish with the object. Only the leader reports, as only Karpenter's leader
runs the status controllers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from karpy.apis.objects import parse_time
from karpy.kube import Informer
from karpy.kube.informer import HandlerFuncs
from karpy.kube.metrics import REGISTRY

__all__ = [
    "KINDS",
    "TRACKERS",
    "Condition",
    "ConditionTracker",
    "StatusConditionMetrics",
    "conditions_of",
]

JSON = dict[str, Any]
KINDS: Final = ("nodepool", "nodeclaim", "node")

# prometheus/client_golang's `DefBuckets`, which operatorpkg's histograms use.
DEFAULT_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
OBJECT_LABELS: Final = ("namespace", "name", "type", "status", "reason")


@dataclass(frozen=True, slots=True)
class Condition:
    """One status condition as the metrics see it; `since` is its lastTransitionTime (epoch
    seconds) or None when absent."""

    type: str
    status: str
    reason: str
    since: float | None


def _epoch(text: object) -> float | None:
    moment = parse_time(text)
    return moment.timestamp() if moment is not None else None


def conditions_of(obj: Mapping[str, Any]) -> dict[str, Condition]:
    """An object's `status.conditions` by type (a later duplicate type wins)."""
    out: dict[str, Condition] = {}
    for raw in (obj.get("status") or {}).get("conditions") or ():
        if not isinstance(raw, Mapping) or not raw.get("type"):
            continue
        kind = str(raw["type"])
        out[kind] = Condition(
            kind,
            str(raw.get("status") or ""),
            str(raw.get("reason") or ""),
            _epoch(raw.get("lastTransitionTime")),
        )
    return out


@dataclass(frozen=True, slots=True)
class _Seen:
    namespace: str
    name: str
    conditions: dict[str, Condition]
    deleting_since: float | None


class ConditionTracker(Collector):
    """The bookkeeping of one kind: what was last seen of each object, the transition counter
    and histograms, and a collector for the per-object gauges."""

    def __init__(
        self,
        kind: str,
        *,
        registry: CollectorRegistry,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.kind = kind
        self.now = now
        self._seen: dict[tuple[str, str], _Seen] = {}
        prefix = f"operator_{kind}"
        self.transitions = Counter(
            f"{prefix}_status_condition_transitions",
            "The count of transitions of a given object, type and status.",
            labelnames=("type", "status", "reason"),
            registry=registry,
        )
        self.transition_seconds = Histogram(
            f"{prefix}_status_condition_transition_seconds",
            "The amount of time a condition was in a given state before transitioning. "
            "e.g. Alarm := P99(Updated=False) > 5 minutes",
            labelnames=("type", "status"),
            buckets=DEFAULT_BUCKETS,
            registry=registry,
        )
        self.termination_duration = Histogram(
            f"{prefix}_termination_duration_seconds",
            "The amount of time taken by an object to terminate completely.",
            buckets=DEFAULT_BUCKETS,
            registry=registry,
        )
        self._count_name = f"{prefix}_status_condition_count"
        self._current_name = f"{prefix}_status_condition_current_status_seconds"
        self._terminating_name = f"{prefix}_termination_current_time_seconds"
        registry.register(self)

    def __len__(self) -> int:
        return len(self._seen)

    @staticmethod
    def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return str(meta.get("namespace") or ""), str(meta.get("name") or "")

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Record the object as it is now: count the conditions whose status changed since it
        was last seen (every condition, the first time) and time the statuses they left."""
        key = self._key(obj)
        current = conditions_of(obj)
        before = self._seen.get(key)
        previous = before.conditions if before is not None else {}
        for kind, cond in current.items():
            old = previous.get(kind)
            if old is not None and old.status == cond.status:
                continue
            self.transitions.labels(kind, cond.status, cond.reason).inc()
            if old is not None and old.since is not None and cond.since is not None:
                self.transition_seconds.labels(kind, old.status).observe(
                    max(0.0, cond.since - old.since)
                )
        deleting = _epoch((obj.get("metadata") or {}).get("deletionTimestamp"))
        if deleting is None and before is not None:
            deleting = before.deleting_since
        self._seen[key] = _Seen(key[0], key[1], current, deleting)

    def forget(self, obj: Mapping[str, Any]) -> None:
        """The object is gone: drop its series and, if it was terminating, time the
        termination."""
        before = self._seen.pop(self._key(obj), None)
        deleting = before.deleting_since if before is not None else None
        if deleting is None:
            deleting = _epoch((obj.get("metadata") or {}).get("deletionTimestamp"))
        if deleting is not None:
            self.termination_duration.observe(max(0.0, self.now() - deleting))

    def clear(self) -> None:
        self._seen.clear()

    # -- Collector --------------------------------------------------------------------------------

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        count = GaugeMetricFamily(
            self._count_name,
            "The number of a condition for a given object, type and status. "
            "e.g. Alarm := Available=False > 0",
            labels=OBJECT_LABELS,
        )
        current = GaugeMetricFamily(
            self._current_name,
            "The current amount of time in seconds that a status condition has been in a "
            "specific state. Alarm := P99(Updated=Unknown) > 5 minutes",
            labels=OBJECT_LABELS,
        )
        terminating = GaugeMetricFamily(
            self._terminating_name,
            "The current amount of time in seconds that an object has been in terminating state.",
            labels=("namespace", "name"),
        )
        now = self.now()
        for seen in list(self._seen.values()):
            for cond in seen.conditions.values():
                labels = [seen.namespace, seen.name, cond.type, cond.status, cond.reason]
                count.add_metric(labels, 1.0)
                if cond.since is not None:
                    current.add_metric(labels, max(0.0, now - cond.since))
            if seen.deleting_since is not None:
                terminating.add_metric(
                    [seen.namespace, seen.name], max(0.0, now - seen.deleting_since)
                )
        yield count
        yield current
        yield terminating


TRACKERS: Final[Mapping[str, ConditionTracker]] = {
    kind: ConditionTracker(kind, registry=REGISTRY) for kind in KINDS
}


class StatusConditionMetrics:
    """A leader-only runnable: while it runs, the informers' events feed `TRACKERS` (the
    caches' contents first, as adds), and `/metrics` reports them."""

    needs_leader_election = True

    def __init__(
        self,
        *,
        informers: Mapping[str, Informer],
        trackers: Mapping[str, ConditionTracker] = TRACKERS,
    ) -> None:
        self.informers = informers
        self.trackers = trackers

    def __repr__(self) -> str:
        return "<metrics.status>"

    async def start(self, stop: asyncio.Event) -> None:
        # Informers cannot drop a handler: each run's handlers go quiet when it ends, so a
        # later run (leadership regained) does not count events twice.
        live = [True]
        for kind, informer in self.informers.items():
            informer.add_handler(_handler(self.trackers[kind], live))
        try:
            await stop.wait()
        finally:
            live[0] = False
            for kind in self.informers:
                self.trackers[kind].clear()


def _handler(tracker: ConditionTracker, live: list[bool]) -> HandlerFuncs:
    def add(obj: JSON) -> None:
        if live[0]:
            tracker.observe(obj)

    def update(_old: JSON, new: JSON) -> None:
        if live[0]:
            tracker.observe(new)

    def delete(obj: JSON) -> None:
        if live[0]:
            tracker.forget(obj)

    return HandlerFuncs(add=add, update=update, delete=delete)
