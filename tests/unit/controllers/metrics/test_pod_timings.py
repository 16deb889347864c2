"""Pod timing metrics: durations observed once per pod karpy could have seen pending."""

from __future__ import annotations

from typing import Any

from prometheus_client import Metric

from karpy.controllers.metrics import pods as m
from karpy.controllers.metrics.pods import PodTimings
from karpy.kube.metrics import REGISTRY

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def _iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _pod(
    name: str, created: float, *, bound: float | None = None, ready: float | None = None
) -> Any:
    conditions = []
    if bound is not None:
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": _iso(bound)}
        )
    if ready is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": _iso(ready)})
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": _iso(created)},
        "spec": {"nodeName": "n" if bound is not None else None},
        "status": {
            "phase": "Running" if ready is not None else "Pending",
            "conditions": conditions,
        },
    }


def _count(metric: Any) -> float:
    families: list[Metric] = list(metric.collect())
    return next(s.value for s in families[0].samples if s.name.endswith("_count"))


def test_durations_are_observed_once_for_pods_seen_pending() -> None:
    before_bound = _count(m.BOUND_DURATION)
    before_startup = _count(m.STARTUP_DURATION)
    before_provisioning = _count(m.PROVISIONING_BOUND_DURATION)
    timings = PodTimings(since=T0)
    timings.update(
        [_pod("new", T0 + 1), _pod("old", T0 - 600, bound=T0 - 590, ready=T0 - 580)], T0 + 2
    )
    assert (
        REGISTRY.get_sample_value(
            "karpenter_pods_unbound_time_seconds", {"name": "new", "namespace": "ns"}
        )
        == 1.0
    )
    timings.update([_pod("new", T0 + 1, bound=T0 + 5, ready=T0 + 9)], T0 + 10)
    timings.update([_pod("new", T0 + 1, bound=T0 + 5, ready=T0 + 9)], T0 + 11)
    assert _count(m.BOUND_DURATION) == before_bound + 1  # "old" ran before karpy led
    assert _count(m.STARTUP_DURATION) == before_startup + 1
    assert _count(m.PROVISIONING_BOUND_DURATION) == before_provisioning + 1
    assert (
        REGISTRY.get_sample_value(
            "karpenter_pods_unbound_time_seconds", {"name": "new", "namespace": "ns"}
        )
        is None
    )


def test_a_trimmed_condition_counts_from_when_it_was_seen() -> None:
    before = _count(m.BOUND_DURATION)
    timings = PodTimings(since=T0)
    pod = _pod("trimmed", T0 + 1, bound=T0 + 3)
    del pod["status"]["conditions"][0]["lastTransitionTime"]  # as the informer keeps it
    timings.update([pod], T0 + 4)
    assert _count(m.BOUND_DURATION) == before + 1
