"""Summaries export quantiles over a sliding window, as Go's client does: Karpenter's
dashboards query `{quantile="0.5"}` etc. on its summaries."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from karpy.kube.metrics import SUMMARY_QUANTILES, QuantileSummary


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_labelled_summary_exports_karpenters_quantiles_with_count_and_sum() -> None:
    registry = CollectorRegistry()
    summary = QuantileSummary("t_seconds", "help", ["nodepool"], registry=registry)
    for value in range(1, 101):
        summary.labels("a").observe(float(value))
    got = _samples(registry)
    quantiles = {
        dict(labels)["quantile"]: v for (name, labels), v in got.items() if name == "t_seconds"
    }
    assert quantiles == {"0": 1.0, "0.5": 50.0, "0.9": 90.0, "0.99": 99.0, "1": 100.0}
    assert got[("t_seconds_count", (("nodepool", "a"),))] == 100
    assert got[("t_seconds_sum", (("nodepool", "a"),))] == 5050
    assert len(quantiles) == len(SUMMARY_QUANTILES)


def test_summary_without_observations_reports_nan_quantiles() -> None:
    registry = CollectorRegistry()
    QuantileSummary("u_seconds", "help", registry=registry)
    got = _samples(registry)
    values = [v for (name, _), v in got.items() if name == "u_seconds"]
    assert len(values) == len(SUMMARY_QUANTILES)
    assert all(math.isnan(v) for v in values)
    assert got[("u_seconds_count", ())] == 0
