"""Cluster metrics from the caches: pods_state per pod with its node's labels, NodePool usage
and limits; reported only while the (leader-only) metrics runnable runs. operatorpkg's status
metrics from the informers' events."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.controllers.metrics import MetricsController
from karpy.controllers.metrics.conditions import StatusConditionMetrics
from karpy.kube import NODES, PODS
from karpy.kube.metrics import REGISTRY
from tests.integration.disruption.support import HOLD, Env, create_node, initialized
from tests.kit import kwok_nodeclass, nodeclaim, nodepool, pod

pytestmark = pytest.mark.timeout(120)


def samples(name: str) -> list[tuple[dict[str, str], float]]:
    text = generate_latest(REGISTRY).decode()
    return [
        (s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]


async def test_pods_state_and_nodepool_usage_and_limits(env: Env, namespace: str) -> None:
    pods = await env.informer(PODS)
    nodes = await env.informer(NODES)
    pools = await env.informer(NODEPOOLS)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    pool = nodepool()
    pool["spec"]["limits"] = {"cpu": "100", "memory": "1000Gi"}
    await env.create(NODEPOOLS, pool)
    await env.patch_status(
        NODEPOOLS,
        "pool",
        {
            "resources": {
                "cpu": "4500m",
                "memory": "16Gi",
                "ephemeral-storage": "20Gi",
                "nodes": "2",
            }
        },
    )
    await create_node(
        env,
        "metrics-node",
        provider_id="kwok://metrics-node",
        labels={
            "karpenter.sh/nodepool": "pool",
            "topology.kubernetes.io/zone": "test-zone-a",
            "kubernetes.io/arch": "amd64",
            "karpenter.sh/capacity-type": "spot",
            "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
        },
    )
    await env.client.create(PODS, pod("web", namespace, node="metrics-node"), namespace=namespace)
    await env.cached(pods, f"{namespace}/web", lambda p: True)
    await env.cached(nodes, "metrics-node", lambda n: True)
    await env.cached(pools, "pool", lambda p: bool((p.get("status") or {}).get("resources")))

    assert samples("karpenter_pods_state") == []  # not leading: nothing reported
    controller = MetricsController(pods=pods, nodes=nodes, nodepools=pools)
    env.run(controller)
    await asyncio.sleep(0.1)

    states = [labels for labels, _ in samples("karpenter_pods_state") if labels["name"] == "web"]
    assert states == [
        {
            "name": "web",
            "namespace": namespace,
            "owner": "",
            "node": "metrics-node",
            "nodepool": "pool",
            "zone": "test-zone-a",
            "arch": "amd64",
            "capacity_type": "spot",
            "instance_type": "c-4x-amd64-linux",
            "phase": "Pending",
        }
    ]
    usage = {
        labels["resource_type"]: value
        for labels, value in samples("karpenter_nodepools_usage")
        if labels["nodepool"] == "pool"
    }
    assert usage == {
        "cpu": 4.5,
        "memory": 16 * 2**30,
        "ephemeral_storage": 20 * 2**30,
        "nodes": 2.0,
    }
    limits = {
        labels["resource_type"]: value
        for labels, value in samples("karpenter_nodepools_limit")
        if labels["nodepool"] == "pool"
    }
    assert limits == {"cpu": 100.0, "memory": 1000 * 2**30}


def _value(metric: str, /, **labels: str) -> float:
    return sum(
        v for got, v in samples(metric) if all(got.get(k) == want for k, want in labels.items())
    )


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_operatorpkg_status_metrics_follow_conditions_and_deletion(env: Env) -> None:
    """A NodePool whose Ready condition flips, a NodeClaim and a held Node that are deleted:
    the per-object series appear and go, transitions are counted and timed, and the held
    Node's termination is reported while it lasts and timed when it ends."""
    pools = await env.informer(NODEPOOLS)
    claims = await env.informer(NODECLAIMS)
    nodes = await env.informer(NODES)
    env.run(
        StatusConditionMetrics(informers={"nodepool": pools, "nodeclaim": claims, "node": nodes})
    )
    flips = "operator_nodepool_status_condition_transitions_total"
    timed = "operator_nodepool_status_condition_transition_seconds"
    node_terms = "operator_node_termination_duration_seconds_count"
    flips_before = _value(flips, type="Ready", status="True")
    timed_before = _value(f"{timed}_count", type="Ready", status="False")
    timed_sum_before = _value(f"{timed}_sum", type="Ready", status="False")
    terms_before = _value(node_terms)

    # a NodePool whose Ready condition goes False -> True after 60 s
    now = datetime.now(UTC).replace(microsecond=0)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool("cond-pool"))
    ready = {"type": "Ready", "status": "False", "reason": "NodeClassNotReady", "message": ""}
    await env.patch_status(
        NODEPOOLS, "cond-pool", {"conditions": [{**ready, "lastTransitionTime": _stamp(now)}]}
    )
    count = "operator_nodepool_status_condition_count"
    await env.until(
        lambda: _value(count, name="cond-pool", status="False") or None,
        timeout=30,
        message="NodePool Ready=False reported",
    )
    assert _value(count, name="cond-pool", namespace="", type="Ready", reason="NodeClassNotReady")
    ready.update(
        status="True", reason="Ready", lastTransitionTime=_stamp(now + timedelta(seconds=60))
    )
    await env.patch_status(NODEPOOLS, "cond-pool", {"conditions": [ready]})
    await env.until(
        lambda: _value(count, name="cond-pool", status="True") or None,
        timeout=30,
        message="NodePool Ready=True reported",
    )
    assert _value(count, name="cond-pool", status="False") == 0  # the old series went
    assert _value(flips, type="Ready", status="True", reason="Ready") == flips_before + 1
    assert _value(f"{timed}_count", type="Ready", status="False") == timed_before + 1
    assert _value(f"{timed}_sum", type="Ready", status="False") == timed_sum_before + 60

    # a NodeClaim with conditions, and a Node held by a finalizer
    claim = nodeclaim("cond-claim", pool="cond-pool")
    await env.create(NODECLAIMS, claim)
    await env.patch_status(NODECLAIMS, "cond-claim", initialized(_stamp(now)))
    await env.create(
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "cond-node", "finalizers": [HOLD]},
            "spec": {"providerID": "kwok://cond-node"},
        },
    )
    claim_count = "operator_nodeclaim_status_condition_count"
    await env.until(
        lambda: _value(claim_count, name="cond-claim", type="Initialized", status="True") or None,
        timeout=30,
        message="NodeClaim conditions reported",
    )
    await env.cached(nodes, "cond-node", lambda n: True)

    await env.client.delete(NODECLAIMS, "cond-claim")
    await env.client.delete(NODES, "cond-node")
    terminating = "operator_node_termination_current_time_seconds"
    await env.until(
        lambda: any(lb["name"] == "cond-node" for lb, _ in samples(terminating)) or None,
        timeout=30,
        message="the held Node reported terminating",
    )
    await env.until(
        lambda: not _value(claim_count, name="cond-claim") or None,
        timeout=30,
        message="the deleted NodeClaim's series gone",
    )
    await env.client.patch(NODES, "cond-node", {"metadata": {"finalizers": None}})
    await env.until(
        lambda: _value(node_terms) > terms_before or None,
        timeout=30,
        message="the Node's termination timed",
    )
    assert not any(lb["name"] == "cond-node" for lb, _ in samples(terminating))
    await env.client.delete(NODEPOOLS, "cond-pool")
    await env.until(
        lambda: not _value(count, name="cond-pool") or None,
        timeout=30,
        message="the deleted NodePool's series gone",
    )
