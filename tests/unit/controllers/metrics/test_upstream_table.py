"""karpy registers every Karpenter metric of the table with Karpenter's name, type, labels and
buckets; the table itself is well formed."""

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


@pytest.mark.parametrize(
    "row", [m for m in KARPENTER_METRICS if not m.missing], ids=lambda m: m.name
)
def test_karpy_registers_each_exported_metric_as_karpenter_does(
    row: object, registered: dict[str, RegisteredMetric]
) -> None:
    from karpy.controllers.metrics.upstream import KarpenterMetric

    assert isinstance(row, KarpenterMetric)
    got = registered.get(row.name)
    assert got is not None, f"{row.name} is not registered"
    assert got.type == row.type
    assert set(got.labels) == set(row.labels)
    if row.buckets is not None:
        assert got.buckets == tuple(float(b) for b in row.buckets)


def test_metrics_karpy_leaves_out_are_not_registered_and_say_why(
    registered: dict[str, RegisteredMetric],
) -> None:
    for row in KARPENTER_METRICS:
        if row.missing:
            assert row.name not in registered
            assert len(row.missing) > 10
