"""End to end: `/metrics` of a real `karpy run` (kwok provider) against the table of Karpenter
v1.14.1's metrics.

One scenario makes many metrics appear: a NodePool with limits provisions for two
Deployments; one is scaled to zero, so consolidation removes or replaces an underused node
(termination). Every table metric on `/metrics` must have Karpenter's type and label names,
the eagerly registered ones from start-up, and the ones dashboards need must have samples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import pytest
from kubetest import Kubectl

from karpy.controllers.metrics.upstream import KARPENTER_METRICS
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess, Sample, parse_metrics
from tests.e2e.support import deployment, scale, wait_bound, wait_for

pytestmark = pytest.mark.timeout(600)
POOL = "parity"
TABLE = {m.name: m for m in KARPENTER_METRICS if not m.missing}
_TYPE = re.compile(r"^# TYPE (\S+) (\S+)$", re.MULTILINE)
_SUFFIXES = ("_bucket", "_sum", "_count")

# Metrics Karpenter's dashboards query, which this scenario must fill with samples.
MUST_APPEAR = (
    "karpenter_build_info",
    "karpenter_nodes_allocatable",
    "karpenter_nodes_total_pod_requests",
    "karpenter_nodes_system_overhead",
    "karpenter_nodes_current_lifetime_seconds",
    "karpenter_cluster_utilization_percent",
    "karpenter_nodepools_limit",
    "karpenter_nodepools_usage",
    "karpenter_nodepools_cost_total",
    "karpenter_nodepools_allowed_disruptions",
    "karpenter_nodepools_nodes_consuming_budgets",
    "karpenter_pods_state",
    "karpenter_pods_bound_duration_seconds",
    "karpenter_pods_startup_duration_seconds",
    "karpenter_pods_provisioning_bound_duration_seconds",
    "karpenter_pods_provisioning_startup_duration_seconds",
    "karpenter_nodeclaims_created_total",
    "karpenter_nodes_created_total",
    "karpenter_nodes_terminated_total",
    "karpenter_nodeclaims_terminated_total",
    "karpenter_nodeclaims_disrupted_total",
    "karpenter_scheduler_scheduling_duration_seconds",
    "karpenter_scheduler_unschedulable_pods_count",
    "karpenter_scheduler_ignored_pods_count",
    "karpenter_voluntary_disruption_decisions_total",
    "karpenter_voluntary_disruption_decisions_by_nodepool_total",
    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
    "karpenter_voluntary_disruption_eligible_nodes",
    "karpenter_cloudprovider_duration_seconds",
    "karpenter_cloudprovider_instance_type_offering_price_estimate",
    "karpenter_cluster_state_node_count",
    "karpenter_cluster_state_synced",
    # operatorpkg's status controllers (the consolidated NodeClaim's termination is timed)
    "operator_nodepool_status_condition_count",
    "operator_nodeclaim_status_condition_count",
    "operator_nodeclaim_status_condition_current_status_seconds",
    "operator_nodeclaim_status_condition_transitions_total",
    "operator_nodeclaim_termination_duration_seconds",
    "operator_node_status_condition_count",
)


def _family(sample_name: str, types: dict[str, str]) -> str:
    """The family a sample belongs to (`x_bucket` -> `x` for a histogram `x`)."""
    if sample_name in types:
        return sample_name
    for suffix in _SUFFIXES:
        base = sample_name.removesuffix(suffix)
        if base != sample_name and types.get(base) in ("histogram", "summary"):
            return base
    return sample_name


def _families(text: str) -> tuple[dict[str, str], dict[str, list[Sample]]]:
    types = {name: kind for name, kind in _TYPE.findall(text)}
    samples: dict[str, list[Sample]] = {}
    for s in parse_metrics(text):
        samples.setdefault(_family(s.name, types), []).append(s)
    return types, samples


def _filled(name: str, samples: dict[str, list[Sample]]) -> bool:
    """Samples, and for a histogram or summary at least one observation."""
    found = samples.get(name, [])
    counts = [s.value for s in found if s.name == f"{name}_count"]
    return bool(found) and (not counts or max(counts) > 0)


def _label_names(samples: Iterable[Sample]) -> set[str]:
    return {k for s in samples for k in s.labels if k not in ("le", "quantile")}


def _check_parity(text: str) -> list[str]:
    """Every table metric on the page, with its samples: type and label names as Karpenter's."""
    types, samples = _families(text)
    problems = []
    for name, row in TABLE.items():
        if name not in types:
            continue
        if types[name] != row.type:
            problems.append(f"{name}: type {types[name]}, Karpenter's is {row.type}")
        for s in samples.get(name, ()):
            got = _label_names([s])
            if got != set(row.labels):
                problems.append(f"{name}: labels {sorted(got)}, Karpenter's {sorted(row.labels)}")
                break
    return problems


def test_metrics_match_karpenters_names_types_and_labels(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    types, _ = _families(karpy.metrics_text())
    missing_at_start = [m.name for m in TABLE.values() if m.eager and m.name not in types]
    assert missing_at_start == [], "registered eagerly by Karpenter, absent at start-up"

    kwok_pool(
        POOL,
        limits={"cpu": "40", "memory": "160Gi"},
        consolidate_after="5s",
        policy="WhenEmptyOrUnderutilized",
        budgets=[{"nodes": "100%"}],
    )
    kubectl.apply(deployment("big", namespace, replicas=2, cpu="3", memory="1Gi"))
    kubectl.apply(deployment("web", namespace, replicas=2, cpu="500m", memory="512Mi"))
    wait_bound(kubectl, namespace, 4, timeout=240)
    scale(kubectl, namespace, "big", 0)

    def filled() -> list[str] | None:
        _, samples = _families(karpy.metrics_text())
        absent = [n for n in MUST_APPEAR if not _filled(n, samples)]
        priced = any(
            s.value > 0 and s.labels.get("nodepool") == POOL
            for s in samples.get("karpenter_nodepools_cost_total", ())
        )
        return None if not absent and priced else absent

    try:
        wait_for(lambda: filled() is None, timeout=420, message="every dashboard metric filled")
    except AssertionError:
        _, samples = _families(karpy.metrics_text())
        pytest.fail(f"no samples yet: {[n for n in MUST_APPEAR if not _filled(n, samples)]}")

    text = karpy.metrics_text()
    assert _check_parity(text) == []
    _, samples = _families(text)
    costs = [s for s in samples["karpenter_nodepools_cost_total"] if s.labels["nodepool"] == POOL]
    assert costs and costs[0].value > 0, "the pool's NodeClaims are priced"
    limits = {
        s.labels["resource_type"]: s.value
        for s in samples["karpenter_nodepools_limit"]
        if s.labels["nodepool"] == POOL
    }
    assert limits["cpu"] == 40
    [build] = samples["karpenter_build_info"]
    assert build.value == 1 and build.labels["version"]

    # karpy's own: the same cost in the NodePool's status, shown by `kubectl get -o wide`
    def status_cost() -> float:
        pool = json.loads(kubectl("get", "nodepool", POOL, "-o", "json").stdout)
        return float((pool.get("status") or {}).get("cost") or 0)

    wait_for(lambda: status_cost() > 0, timeout=60, message="status.cost written")
    header, row = (
        line.split() for line in kubectl("get", "nodepool", POOL, "-o", "wide").stdout.splitlines()
    )
    assert header[-1] == "COST" and float(row[-1]) > 0
