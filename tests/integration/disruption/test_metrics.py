"""Cluster metrics from the caches: pods_state per pod with its node's labels, NodePool usage
and limits; reported only while the (leader-only) metrics runnable runs."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from karpy.apis.descriptors import KWOKNODECLASSES, NODEPOOLS
from karpy.controllers.metrics import MetricsController
from karpy.kube import NODES, PODS
from karpy.kube.metrics import REGISTRY
from tests.integration.disruption.support import Env, create_node
from tests.kit import kwok_nodeclass, nodepool, pod

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
