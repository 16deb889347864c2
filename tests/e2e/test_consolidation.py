"""End to end: consolidation with a real `karpy run` (kwok provider) on the session control plane.

A Deployment scaled down leaves its node underused: consolidation replaces it with a cheaper node
(or deletes it when the pods fit elsewhere), within the NodePool's budget, while a
PodDisruptionBudget (maxUnavailable 1) keeps all but one of the remaining pods Ready throughout.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
from kubetest import Kubectl

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import (
    condition,
    deployment,
    nodeclaims,
    nodes,
    pods,
    scale,
    wait_bound,
    wait_for,
)

pytestmark = pytest.mark.timeout(600)
JSON = dict[str, Any]
POOL = "consol"
PRICES = {
    (t.name, o.zone, o.capacity_type): o.price for t in kwok_instance_types() for o in t.offerings
}


def _ready(pod: JSON) -> bool:
    ready = condition(pod, "Ready")
    return (
        not pod["metadata"].get("deletionTimestamp")
        and ready is not None
        and ready.get("status") == "True"
    )


@contextmanager
def _ready_samples(kubectl: Kubectl, namespace: str, selector: str) -> Iterator[list[int]]:
    """How many selected pods are Ready (and not terminating), sampled until the block ends."""
    samples: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            with suppress(Exception):  # a failed poll is just a missing sample
                samples.append(sum(_ready(p) for p in pods(kubectl, namespace, selector)))
            stop.wait(0.3)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(10)


def _pool_nodes(kubectl: Kubectl) -> list[JSON]:
    return nodes(kubectl, selector=f"karpenter.sh/nodepool={POOL}")


def _cost(kubectl: Kubectl) -> float:
    total = 0.0
    for n in _pool_nodes(kubectl):
        if n["metadata"].get("deletionTimestamp"):
            continue
        labels = n["metadata"]["labels"]
        total += PRICES[
            (
                labels["node.kubernetes.io/instance-type"],
                labels["topology.kubernetes.io/zone"],
                labels["karpenter.sh/capacity-type"],
            )
        ]
    return total


def test_scaling_down_consolidates_the_underused_node_within_the_pdb(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool(
        POOL,
        consolidate_after="5s",
        policy="WhenEmptyOrUnderutilized",
        budgets=[{"nodes": "100%"}],
    )
    kubectl.apply(deployment("big", namespace, replicas=4, cpu="3", memory="1Gi"))
    kubectl.apply(deployment("web", namespace, replicas=4, cpu="500m", memory="512Mi"))
    kubectl.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    wait_bound(kubectl, namespace, 8, timeout=180)

    def budget_ready() -> bool:
        pdb = kubectl.json("get", "pdb", "web", f"--namespace={namespace}")
        status = pdb.get("status") or {}
        return status.get("currentHealthy") == 4 and status.get("disruptionsAllowed") == 1

    wait_for(budget_ready, timeout=90, message="the PDB to count 4 healthy pods")
    before = _cost(kubectl)
    first = {n["metadata"]["name"] for n in _pool_nodes(kubectl)}

    with _ready_samples(kubectl, namespace, "app=web") as samples:
        scale(kubectl, namespace, "big", 0)

        def consolidated() -> bool:
            names = {n["metadata"]["name"] for n in _pool_nodes(kubectl)}
            web = pods(kubectl, namespace, "app=web")
            return (
                _cost(kubectl) < before
                and not any(c["metadata"].get("deletionTimestamp") for c in nodeclaims(kubectl))
                and not first <= names
                and len([p for p in web if _ready(p)]) == 4
            )

        wait_for(consolidated, timeout=420, message="a cheaper cluster with every web pod Ready")

    after = _cost(kubectl)
    assert after < before, (before, after)
    assert samples and min(samples) >= 3, (
        f"more web pods unavailable than the PDB allows: {samples}"
    )
    decisions = karpy.log_lines("disrupting node(s) via")
    assert any("underutilized" in line for line in decisions), decisions
    disrupted = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_nodeclaims_disrupted_total" and s.labels.get("nodepool") == POOL
    ]
    assert {s.labels["reason"] for s in disrupted if s.value} >= {"underutilized"}
    # every web pod runs on a node of the pool, none on a node that was disrupted
    live = {n["metadata"]["name"] for n in _pool_nodes(kubectl)}
    assert all(p["spec"].get("nodeName") in live for p in pods(kubectl, namespace, "app=web"))
