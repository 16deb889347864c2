"""Node repair in-process against a real apiserver, with the kwok provider's policies (Ready
False or Unknown for 10 minutes): an unhealthy node past its toleration has its NodeClaim
stamped for forceful termination and deleted; one within it is looked at again when it is due;
with more than 20% of the NodePool unhealthy nothing is deleted and an event says why."""

from __future__ import annotations

from datetime import timedelta

import pytest
from kubetest import node_status

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.cloudprovider.types import RepairPolicy
from karpy.controllers.node.health import NodeHealthController
from karpy.kube import NODES, EventRecorder
from karpy.kube.resources import EVENTS
from karpy.state import Cluster
from tests.integration.disruption.support import Env, managed_node
from tests.kit import kwok_nodeclass, nodepool

pytestmark = pytest.mark.timeout(180)

LONG_AGO = "2026-01-01T00:00:00Z"
POLICIES = [
    RepairPolicy(condition_type="Ready", condition_status=s, toleration=timedelta(minutes=10))
    for s in ("False", "Unknown")
]


async def _setup(env: Env, names: list[str]) -> tuple[NodeHealthController, Cluster, EventRecorder]:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool())
    for name in names:
        await managed_node(env, name, hold=True)
    cluster = Cluster(env.cache)
    recorder = EventRecorder(env.client)
    controller = NodeHealthController(
        client=env.client,
        cluster=cluster,
        nodes=env.cache.informer(NODES),
        policies=POLICIES,
        events=recorder,
    )
    await env.until(
        lambda: cluster.synced() and len(cluster.nodes()) == len(names), message="cluster state"
    )
    return controller, cluster, recorder


async def _not_ready(env: Env, cluster: Cluster, name: str, since: str | None) -> None:
    await env.patch_status(NODES, name, node_status(ready=False, stamp=since))
    await env.until(
        lambda: (
            (n := cluster.node_for_node_name(name)) is not None
            and n.node is not None
            and n.node["status"]["conditions"][0]["status"] == "False"
        ),
        message=f"{name} NotReady in cache",
    )


async def test_unhealthy_past_toleration_is_deleted_forcefully_and_recent_waits(env: Env) -> None:
    controller, cluster, _ = await _setup(env, [f"n{i}" for i in range(6)])
    await _not_ready(env, cluster, "n0", LONG_AGO)
    await _not_ready(env, cluster, "n1", None)  # just now

    assert await controller.reconcile("n0") is None
    claim = await env.get(NODECLAIMS, "n0")
    assert claim["metadata"].get("deletionTimestamp")
    assert "karpenter.sh/nodeclaim-termination-timestamp" in claim["metadata"]["annotations"]

    result = await controller.reconcile("n1")
    assert result is not None and result.requeue_after is not None
    assert 500 < result.requeue_after <= 600
    assert not (await env.get(NODECLAIMS, "n1"))["metadata"].get("deletionTimestamp")
    assert await controller.reconcile("n2") is None  # healthy
    assert not (await env.get(NODECLAIMS, "n2"))["metadata"].get("deletionTimestamp")


async def test_more_than_a_fifth_unhealthy_blocks_repair(env: Env) -> None:
    controller, cluster, recorder = await _setup(env, ["a", "b", "c"])
    await _not_ready(env, cluster, "a", LONG_AGO)
    await _not_ready(env, cluster, "b", LONG_AGO)  # 2 of 3 > ceil(0.6) = 1

    result = await controller.reconcile("a")
    assert result is not None and result.requeue_after == 300.0
    assert not (await env.get(NODECLAIMS, "a"))["metadata"].get("deletionTimestamp")
    await recorder.flush()
    blocked = (await env.client.list(EVENTS, field_selector="reason=NodeRepairBlocked")).items
    assert blocked

    # Once one recovers, the other may be repaired.
    await env.patch_status(NODES, "b", node_status(ready=True))
    await env.until(
        lambda: (
            (n := cluster.node_for_node_name("b")) is not None
            and n.node is not None
            and n.node["status"]["conditions"][0]["status"] == "True"
        ),
        message="b Ready in cache",
    )
    assert await controller.reconcile("a") is None
    assert (await env.get(NODECLAIMS, "a"))["metadata"].get("deletionTimestamp")
