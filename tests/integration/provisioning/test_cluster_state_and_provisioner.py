"""Cluster state over real informers (the synced gate, nodes joined to NodeClaims, pods,
NodePool totals) and one provisioning pass in-process."""

from __future__ import annotations

import json
from typing import Any

from kubetest import async_wait_until

from karpy.apis.descriptors import NODECLAIMS
from karpy.controllers.provisioning import Batcher, Provisioner
from karpy.kube import PODS
from karpy.kube.metrics import REGISTRY
from tests.integration.provisioning.conftest import Env
from tests.integration.provisioning.support import nodeclaim, nodeclass, set_ready
from tests.kit import nodepool

JSON = dict[str, Any]


async def _eventually(check: Any, message: str) -> Any:
    async def probe() -> Any:
        return check()

    return await async_wait_until(probe, timeout=90, message=message)


async def test_synced_gate_and_join(env: Env) -> None:
    cluster = env.cluster
    assert cluster.synced()
    created: JSON = await env.client.create(NODECLAIMS, nodeclaim("state-1"))
    cluster.update_nodeclaim(created)
    # Before the watch says anything: a created, unlaunched NodeClaim holds provisioning back.
    assert not cluster.synced()
    assert cluster.unlaunched_nodeclaims() == ["state-1"]
    assert cluster.nodes() == [], "an unlaunched NodeClaim is not a node"

    status = {
        "status": {
            "providerID": "kwok://state-1",
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"},
            "allocatable": {"cpu": "3900m", "memory": "8Gi", "pods": "20"},
        }
    }
    env.kubectl(
        "patch",
        "nodeclaim",
        "state-1",
        "--subresource=status",
        "--type=merge",
        "--patch",
        json.dumps(status),
    )
    await _eventually(cluster.synced, "synced once launched")
    (node,) = cluster.nodes()
    assert node.node is None and node.nodeclaim_name == "state-1" and not node.registered
    assert cluster.nodepool_resources("pool") == {
        "nodes": 1,
        "cpu": 4000,
        "memory": 8 * 1024**3,
        "pods": 20,
    }

    env.kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "state-1", "labels": {"karpenter.sh/nodepool": "pool"}},
            "spec": {"providerID": "kwok://state-1"},
        }
    )
    await env.client.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "bound", "namespace": env.namespace},
            "spec": {
                "nodeName": "state-1",
                "containers": [
                    {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "500m"}}}
                ],
            },
        },
    )
    joined = await _eventually(
        lambda: [n for n in cluster.nodes() if n.node is not None and n.pods], "joined node"
    )
    assert len(cluster.nodes()) == 1
    assert joined[0].nodeclaim_name == "state-1"
    assert joined[0].pod_requests["cpu"] == 500
    cluster.mark_for_deletion(joined[0].key)
    cluster.nominate(joined[0].key)
    (node,) = cluster.nodes()
    assert node.marked_for_deletion and node.nominated
    assert [p["metadata"]["name"] for p in cluster.pods_on_deleting_nodes()] == ["bound"]


async def test_one_provisioning_pass(env: Env) -> None:
    env.kubectl.apply(nodeclass())
    env.kubectl.apply(
        nodepool(
            requirements=[
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            ],
            limits={"cpu": "100"},
            # the API's defaults, written out (the kit always sets them)
            policy="WhenEmptyOrUnderutilized",
            consolidate_after="0s",
        )
    )
    set_ready(env.kubectl, "nodepool", "pool")
    env.kubectl.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pending-{i}", "namespace": env.namespace},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "pause",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        }
                    ]
                },
            }
            for i in range(3)
        ]
        + [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "ignored", "namespace": env.namespace},
                "spec": {
                    "nodeSelector": {"karpenter.sh/made-up": "x"},
                    "containers": [{"name": "c", "image": "pause"}],
                },
            }
        ]
    )
    # kube-scheduler finds no node for them: they become provisionable.
    await _eventually(lambda: len(env.cluster.provisionable_pods()) == 4, "4 unschedulable pods")
    await _eventually(
        lambda: (
            env.cluster.nodepool_informer.get("pool") is not None
            and (env.cluster.nodepool_informer.get("pool") or {}).get("status")
        ),
        "the NodePool in the cache",
    )
    provisioner = Provisioner(
        client=env.client,
        cluster=env.cluster,
        cloud_provider=env.kwok,
        events=env.events,
        batcher=Batcher(idle=1.0, maximum=10.0),
    )
    gaps_before = REGISTRY.get_sample_value("karpy_scheduler_optimality_gap_ratio_count") or 0.0
    names = await provisioner.provision()
    assert len(names) >= 1
    # a small batch: the exact planner ran and its gap was recorded once
    gaps = REGISTRY.get_sample_value("karpy_scheduler_optimality_gap_ratio_count")
    assert gaps == gaps_before + 1
    claims = (await env.client.list(NODECLAIMS)).items
    assert sorted(c["metadata"]["name"] for c in claims) == sorted(names)
    claim = claims[0]
    assert claim["metadata"]["name"].startswith("pool-")
    assert claim["metadata"]["ownerReferences"][0]["kind"] == "NodePool"
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "pool"
    assert claim["metadata"]["annotations"]["karpenter.sh/nodepool-hash-version"]
    # each NodeClaim records the plan that chose it, for `karpy explain pod`
    plans = [json.loads(c["metadata"]["annotations"]["karpy.sh/provisioning-plan"]) for c in claims]
    assert len({p["batch"] for p in plans}) == 1, plans
    plan = plans[0]
    # the batch: the three pending pods (the invalid one is not planned)
    assert (plan["pods"], plan["nodeClaims"], plan["optimal"]) == (3, len(names), True), plan
    prices = [o[3] for o in plan["options"]]
    assert plan["options"] and prices == sorted(prices) and plan["cost"] > 0, plan
    assert not env.cluster.synced(), "created but not launched"
    planned = env.cluster.planned_pods()
    assert {f"{env.namespace}/pending-{i}" for i in range(3)} <= planned
    # Planned pods are not planned again while their NodeClaims are on the way.
    assert await provisioner.gather() is None

    await env.events.flush()
    events = json.loads(
        env.kubectl("get", "events", f"--namespace={env.namespace}", "-o", "json").stdout
    )["items"]
    # kube-scheduler reports FailedScheduling for the same pods: read karpy's events only.
    by_pod = {
        (e["involvedObject"]["name"], e["reason"]): e["message"]
        for e in events
        if (e.get("source") or {}).get("component") == "karpenter"
    }
    assert "Pod should schedule on: nodeclaim/" in by_pod[("pending-0", "Nominated")]
    assert "karpenter.sh/made-up is restricted" in by_pod[("ignored", "FailedScheduling")]
