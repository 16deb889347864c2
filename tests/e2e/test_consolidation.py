"""End to end: consolidation with a real `karpy run` (kwok provider) on the session control plane.

- A Deployment scaled down leaves its nodes underused: consolidation replaces them with a cheaper
  node, within the NodePool's budget, while a PodDisruptionBudget (maxUnavailable 1) keeps all
  but one of the remaining pods Ready throughout.
- The delete path: two nodes of the NodePool's only type each keep one small pod; the pods fit on
  one node, so one node is deleted and no NodeClaim is launched, the PDB kept.
- `karpenter.sh/do-not-disrupt` keeps underused nodes: on a pod (`"true"`), on a node, and on a
  pod as a duration, which holds its node until the duration since the pod's start has passed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubetest import Kubectl

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import (
    ClaimWatcher,
    deployment,
    nodeclaims,
    pdb,
    pod_ready,
    pods,
    pool_nodes,
    ready_samples,
    scale,
    wait_bound,
    wait_for,
    wait_pdb,
    wait_pool_nodes,
)
from tests.kit import LINUX_AMD64_ON_DEMAND

pytestmark = pytest.mark.timeout(600)
JSON = dict[str, Any]
POOL = "consol"
PRICES = {
    (t.name, o.zone, o.capacity_type): o.price for t in kwok_instance_types() for o in t.offerings
}


# One instance type in one zone: a replacement could only be one of the nodes again, so every
# consolidation of these NodePools is a delete.
ONE_TYPE = (
    *LINUX_AMD64_ON_DEMAND,
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c-4x-amd64-linux"]},
    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-a"]},
)
FILLER_CPU = "2500m"
"""With a 1-CPU pod, one filler fills a c-4x node (3.9 CPU allocatable): one small pod each."""


def _pool_nodes(kubectl: Kubectl) -> list[JSON]:
    return pool_nodes(kubectl, POOL)


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
    kubectl.apply(pdb("web", namespace, app="web"))
    wait_bound(kubectl, namespace, 8, timeout=180)
    wait_pdb(kubectl, namespace, "web", healthy=4, allowed=1)
    before = _cost(kubectl)
    first = {n["metadata"]["name"] for n in _pool_nodes(kubectl)}

    with ready_samples(kubectl, namespace, "app=web") as samples:
        scale(kubectl, namespace, "big", 0)

        def consolidated() -> bool:
            names = {n["metadata"]["name"] for n in _pool_nodes(kubectl)}
            web = pods(kubectl, namespace, "app=web")
            return (
                _cost(kubectl) < before
                and not any(c["metadata"].get("deletionTimestamp") for c in nodeclaims(kubectl))
                and not first <= names
                and len([p for p in web if pod_ready(p)]) == 4
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


def _names(items: list[JSON]) -> set[str]:
    return {i["metadata"]["name"] for i in items}


def _consolidating_pool(kwok_pool: PoolFactory) -> None:
    kwok_pool(
        POOL,
        requirements=ONE_TYPE,
        consolidate_after="5s",
        policy="WhenEmptyOrUnderutilized",
        budgets=[{"nodes": "100%"}],
    )


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_pods_that_fit_on_other_nodes_delete_a_node_without_replacement(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    _consolidating_pool(kwok_pool)
    kubectl.apply(deployment("filler", namespace, replicas=2, cpu=FILLER_CPU, memory="256Mi"))
    kubectl.apply(deployment("web", namespace, replicas=2, cpu="1", memory="256Mi"))
    kubectl.apply(pdb("web", namespace, app="web"))
    wait_bound(kubectl, namespace, 4, timeout=180)
    wait_pdb(kubectl, namespace, "web", healthy=2, allowed=1)
    first = _names(wait_pool_nodes(kubectl, POOL, 2))
    claims = _names(nodeclaims(kubectl))
    assert len({p["spec"]["nodeName"] for p in pods(kubectl, namespace, "app=web")}) == 2

    with ClaimWatcher(kubectl) as watcher, ready_samples(kubectl, namespace, "app=web") as samples:
        scale(kubectl, namespace, "filler", 0)
        remaining = wait_pool_nodes(kubectl, POOL, 1, timeout=300)
        wait_for(
            lambda: len([p for p in pods(kubectl, namespace, "app=web") if pod_ready(p)]) == 2,
            timeout=120,
            message="both web pods Ready",
        )

    kept = remaining[0]["metadata"]["name"]
    assert kept in first
    assert set(watcher.annotations) <= claims, "a NodeClaim was launched for the move"
    assert len(watcher.deleting) == 1, watcher.deleting
    assert samples and min(samples) >= 1, f"both web pods unavailable at once: {samples}"
    assert {p["spec"]["nodeName"] for p in pods(kubectl, namespace, "app=web")} == {kept}
    decisions = karpy.log_lines("disrupting node(s) via delete")
    assert decisions and all("underutilized" in line for line in decisions), decisions
    assert not karpy.log_lines("disrupting node(s) via replace")
    deletes = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_voluntary_disruption_decisions_total"
        and s.labels.get("decision") == "delete"
        and s.labels.get("reason") == "underutilized"
    ]
    assert sum(s.value for s in deletes) == 1


@pytest.mark.timeout(900)
def test_do_not_disrupt_on_a_pod_or_node_keeps_an_underused_node(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    _consolidating_pool(kwok_pool)
    window = 75
    small = {"cpu": "1", "memory": "256Mi"}
    kubectl.apply(deployment("filler", namespace, replicas=4, cpu=FILLER_CPU, memory="256Mi"))
    kubectl.apply(deployment("plain", namespace, replicas=1, **small))
    kubectl.apply(deployment("host", namespace, replicas=1, **small))
    kubectl.apply(
        deployment(
            "pinned",
            namespace,
            replicas=1,
            annotations={"karpenter.sh/do-not-disrupt": "true"},
            **small,
        )
    )
    kubectl.apply(
        deployment(
            "brief",
            namespace,
            replicas=1,
            annotations={"karpenter.sh/do-not-disrupt": f"{window}s"},
            **small,
        )
    )
    wait_bound(kubectl, namespace, 8, timeout=240)
    wait_pool_nodes(kubectl, POOL, 4, timeout=120)

    def node_of(app: str) -> str:
        (pod,) = pods(kubectl, namespace, f"app={app}")
        return str(pod["spec"]["nodeName"])

    placed = {app: node_of(app) for app in ("plain", "host", "pinned", "brief")}
    assert len(set(placed.values())) == 4, placed
    kubectl("annotate", "node", placed["host"], "karpenter.sh/do-not-disrupt=true")
    (brief,) = pods(kubectl, namespace, "app=brief")
    brief_until = _time(brief["status"]["startTime"]) + timedelta(seconds=window)
    brief_until_mono = time.monotonic() + (brief_until - datetime.now(UTC)).total_seconds()
    pinned_uid = pods(kubectl, namespace, "app=pinned")[0]["metadata"]["uid"]
    by_node = {c["status"].get("nodeName"): c["metadata"]["name"] for c in nodeclaims(kubectl)}
    claim_of = {app: by_node[node] for app, node in placed.items()}

    with ClaimWatcher(kubectl) as watcher:
        scale(kubectl, namespace, "filler", 0)
        wait_for(
            lambda: placed["plain"] not in _names(_pool_nodes(kubectl)),
            timeout=300,
            message="the unprotected node consolidated",
        )
        wait_for(
            lambda: _names(_pool_nodes(kubectl)) == {placed["host"], placed["pinned"]},
            timeout=window + 300,
            message="the node of the expired do-not-disrupt duration consolidated",
        )
        # Two nodes a single one could hold: only do-not-disrupt keeps both, a while longer.
        time.sleep(30)
        assert _names(_pool_nodes(kubectl)) == {placed["host"], placed["pinned"]}

    # the brief node went only once its pod's window had passed (1 s of clock skew allowed)
    assert watcher.deleting[claim_of["brief"]] >= brief_until_mono - 1.0, (
        "the node of the do-not-disrupt duration went before the duration passed"
    )
    assert not ({claim_of["host"], claim_of["pinned"]} & set(watcher.deleting))
    (pinned,) = pods(kubectl, namespace, "app=pinned")
    assert pinned["metadata"]["uid"] == pinned_uid, "the do-not-disrupt pod was evicted"
    assert pinned["spec"]["nodeName"] == placed["pinned"]
    assert all(
        p["spec"].get("nodeName") in {placed["host"], placed["pinned"]}
        for p in pods(kubectl, namespace)
    )
