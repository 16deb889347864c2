"""End to end: node repair with a real `karpy run` (kwok provider). A node put into kwok's
`unhealthy` stage (no more status reports) with `Ready=False` since 20 minutes, beyond the kwok
repair policy's 10-minute toleration, is replaced with the `NodeRepair` gate on: its NodeClaim is
deleted with a termination timestamp and the pod runs on a new node. With the gate off the node
stays."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.support import bound_pods, deployment, nodeclaims, nodes, wait_bound, wait_for

pytestmark = pytest.mark.timeout(420)
POOL = "repair"


def _break(kubectl: Kubectl, name: str) -> None:
    kubectl("label", "node", name, "kwok.x-k8s.io/stage=unhealthy", "--overwrite")
    since = (datetime.now(UTC) - timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "test",
        "lastHeartbeatTime": since,
        "lastTransitionTime": since,
    }
    kubectl(
        "patch",
        "node",
        name,
        "--subresource=status",
        "--type=strategic",
        "-p",
        json.dumps({"status": {"conditions": [condition]}}),
    )


def _one_node(kubectl: Kubectl, namespace: str, kwok_pool: PoolFactory) -> str:
    kwok_pool(POOL)
    kubectl.apply(deployment("fragile", namespace, replicas=1, cpu="500m"))
    wait_bound(kubectl, namespace, 1, timeout=180)
    found = wait_for(
        lambda: (ns := nodes(kubectl, selector=f"karpenter.sh/nodepool={POOL}")) and ns,
        message="one node",
    )
    return str(found[0]["metadata"]["name"])


def test_gate_on_replaces_a_node_unhealthy_beyond_its_toleration(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    karpy = karpy_factory({"FEATURE_GATES": "NodeRepair=true"})
    broken = _one_node(kubectl, namespace, kwok_pool)
    _break(kubectl, broken)
    wait_for(
        lambda: broken not in {c["metadata"]["name"] for c in nodeclaims(kubectl)},
        timeout=180,
        message="the unhealthy node's NodeClaim deleted",
    )
    assert karpy.log_lines("deleting unhealthy node")
    wait_for(
        lambda: [
            p
            for p in bound_pods(kubectl, namespace)
            if p["spec"]["nodeName"] != broken and not p["metadata"].get("deletionTimestamp")
        ],
        timeout=180,
        message="the pod running on another node",
    )
    unhealthy = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_nodeclaims_unhealthy_disrupted_total" and s.value > 0
    ]
    assert unhealthy and unhealthy[0].labels.get("condition") == "Ready"


def test_gate_off_leaves_the_node(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    karpy = karpy_factory({"FEATURE_GATES": "NodeRepair=false"})
    broken = _one_node(kubectl, namespace, kwok_pool)
    _break(kubectl, broken)
    time.sleep(30)
    assert broken in {c["metadata"]["name"] for c in nodeclaims(kubectl)}
    assert not karpy.log_lines("deleting unhealthy node")
