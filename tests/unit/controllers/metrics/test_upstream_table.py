"""The table of Karpenter's metrics is well formed, and what karpy leaves out says why."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import karpy
from karpy.controllers.metrics.upstream import KARPENTER_METRICS, NOT_IN_KARPENTER
from karpy.kube.metrics import RegisteredMetric, registered_metrics


@pytest.fixture(scope="module")
def registered() -> dict[str, RegisteredMetric]:
    for module in pkgutil.walk_packages(karpy.__path__, "karpy."):
        importlib.import_module(module.name)
    return {m.name: m for m in registered_metrics()}


def test_table_names_are_unique_and_typed() -> None:
    names = [m.name for m in KARPENTER_METRICS]
    assert len(names) == len(set(names))
    for metric in KARPENTER_METRICS:
        assert metric.help and metric.source, metric.name
        assert metric.buckets is None or metric.type == "histogram", metric.name
        assert not set(NOT_IN_KARPENTER) & {metric.name}


def test_metrics_karpy_leaves_out_are_not_registered_and_say_why(
    registered: dict[str, RegisteredMetric],
) -> None:
    for row in KARPENTER_METRICS:
        if row.missing:
            assert row.name not in registered
            assert len(row.missing) > 10
