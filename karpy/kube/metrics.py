"""The process-wide Prometheus registry and the runtime's own metrics.

Names and labels follow controller-runtime and client-go so dashboards written for Karpenter
keep working: `controller_runtime_*` per controller, `workqueue_*` per queue (labels `name` and
`controller`, both the queue's name), `leader_election_master_status`. karpy-only metrics are
`karpy_*`. Every other package registers its metrics in `REGISTRY` too, so `/metrics` shows one
registry.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, Protocol

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

__all__ = [
    "ACTIVE_WORKERS",
    "EVENT_LOOP_LAG",
    "LEADER_ELECTION_STATUS",
    "MAX_CONCURRENT_RECONCILES",
    "RECONCILE_ERRORS",
    "RECONCILE_TIME",
    "RECONCILE_TOTAL",
    "REGISTRY",
    "REST_CLIENT_REQUESTS",
    "SUMMARY_MAX_AGE",
    "SUMMARY_QUANTILES",
    "TERMINAL_RECONCILE_ERRORS",
    "WORKQUEUE_ADDS",
    "WORKQUEUE_DEPTH",
    "WORKQUEUE_QUEUE_DURATION",
    "WORKQUEUE_RETRIES",
    "WORKQUEUE_WORK_DURATION",
    "InFlightSource",
    "QuantileSummary",
    "RegisteredMetric",
    "register_in_flight",
    "registered_metrics",
]

disable_created_metrics()  # type: ignore[no-untyped-call]  # Go clients export no *_created
REGISTRY = CollectorRegistry(auto_describe=True)
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)

_RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8),
    *(0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30),
    *(40, 50, 60),
)
# client-go: exponential buckets from 10 ns, factor 10, 12 buckets.
_QUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(12))

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
    registry=REGISTRY,
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
    registry=REGISTRY,
)

WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth",
    "Current depth of workqueue",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total",
    "Total number of adds handled by workqueue",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name", "controller"],
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name", "controller"],
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue",
    ["name", "controller"],
    registry=REGISTRY,
)

REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=REGISTRY,
)

LEADER_ELECTION_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
    "1 indicates master. 'name' is the string used to identify the lease.",
    ["name"],
    registry=REGISTRY,
)
EVENT_LOOP_LAG = Gauge(
    "karpy_event_loop_lag_seconds",
    "Largest delay of the asyncio event loop observed over the last sampling window",
    registry=REGISTRY,
)

# Karpenter's `metrics.SummaryObjectives()` quantiles, over client_golang's default window
# (`DefMaxAge`: observations of the last ten minutes).
SUMMARY_QUANTILES: tuple[float, ...] = (0.0, 0.5, 0.9, 0.99, 1.0)
SUMMARY_MAX_AGE = 600.0
_SUMMARY_MAX_SAMPLES = 4096


class QuantileSummary(Summary):
    """A summary that exports quantiles, as Go's client does and dashboards query
    (`{quantile="0.99"}`); prometheus_client's own exports only `_count` and `_sum`.

    Each child keeps its observations of the last `SUMMARY_MAX_AGE` seconds (at most the
    latest 4,096) and ranks them exactly at scrape time; with none in the window every quantile
    is NaN, as Go's summary reports.
    """

    def _metric_init(self) -> None:
        super()._metric_init()
        self._window: deque[tuple[float, float]] = deque(maxlen=_SUMMARY_MAX_SAMPLES)
        self._window_lock = threading.Lock()

    def observe(self, amount: float) -> None:
        super().observe(amount)
        with self._window_lock:
            self._window.append((time.monotonic(), amount))

    def _child_samples(self) -> Iterable[Sample]:
        horizon = time.monotonic() - SUMMARY_MAX_AGE
        with self._window_lock:
            while self._window and self._window[0][0] < horizon:
                self._window.popleft()
            values = sorted(v for _, v in self._window)
        quantiles = [
            Sample("", {"quantile": _format_quantile(q)}, _rank(values, q), None, None)
            for q in SUMMARY_QUANTILES
        ]
        return (*quantiles, *super()._child_samples())


def _rank(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values: the smallest value with at least q of them at or
    below it (the minimum for 0, the maximum for 1); NaN for none."""
    if not ordered:
        return math.nan
    index = max(0, math.ceil(q * len(ordered)) - 1)
    return ordered[min(index, len(ordered) - 1)]


def _format_quantile(q: float) -> str:
    # Go formats 0 and 1 as "0" and "1"; prometheus_client's float text would say "0.0"
    return f"{q:g}"


class InFlightSource(Protocol):
    """A named queue that can say how long its in-flight items have been processing."""

    @property
    def name(self) -> str | None: ...

    def unfinished_work_seconds(self) -> float: ...

    def longest_running_processor_seconds(self) -> float: ...


class _InFlightCollector(Collector):
    """Computes the two in-flight gauges at scrape time instead of on a ticker."""

    def __init__(self) -> None:
        self.sources: weakref.WeakSet[InFlightSource] = weakref.WeakSet()

    def collect(self) -> Iterator[Metric]:
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads.",
            labels=["name", "controller"],
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=["name", "controller"],
        )
        for source in list(self.sources):
            if source.name is None:
                continue
            labels = [source.name, source.name]
            unfinished.add_metric(labels, source.unfinished_work_seconds())
            longest.add_metric(labels, source.longest_running_processor_seconds())
        yield unfinished
        yield longest

    def describe(self) -> Iterator[Metric]:
        return iter(())


_IN_FLIGHT = _InFlightCollector()
REGISTRY.register(_IN_FLIGHT)


def register_in_flight(source: InFlightSource) -> None:
    """Report `source` in the in-flight gauges for as long as it lives."""
    _IN_FLIGHT.sources.add(source)


class RegisteredMetric(NamedTuple):
    """What `/metrics` declares for one name: its type, label names, help and, for a histogram
    defined by a wrapper, its bucket bounds (the `+Inf` bound left out)."""

    name: str
    type: str
    labels: tuple[str, ...]
    help: str
    buckets: tuple[float, ...] | None


def registered_metrics(registry: CollectorRegistry = REGISTRY) -> list[RegisteredMetric]:
    """Every metric family registered in `registry`, the client's standard process, platform
    and GC collectors left out, sorted by name."""
    from prometheus_client.metrics import MetricWrapperBase

    standard = (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR)
    out: dict[str, RegisteredMetric] = {}
    for collector in list(registry._collector_to_names):  # the registry has no public listing
        if any(collector is s for s in standard):
            continue
        if isinstance(collector, MetricWrapperBase):
            name = collector._name
            kind = str(collector._type)
            if kind == "counter" and not name.endswith("_total"):
                name += "_total"
            bounds = getattr(collector, "_upper_bounds", None)
            buckets = tuple(b for b in bounds if b != float("inf")) if bounds else None
            out[name] = RegisteredMetric(
                name, kind, tuple(collector._labelnames), collector._documentation, buckets
            )
            continue
        for family in collector.collect():
            labels = tuple(getattr(family, "_labelnames", ()))
            out[family.name] = RegisteredMetric(
                family.name, str(family.type), labels, family.documentation, None
            )
    return [out[name] for name in sorted(out)]
