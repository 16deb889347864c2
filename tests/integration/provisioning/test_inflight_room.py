"""Pods planned onto a NodeClaim whose Node has not registered take its room: a later batch only
plans onto it what still fits (in-process provisioner and lifecycle, kwok provider with a
registration delay, against the real control plane)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kubetest import async_wait_until

from karpy.apis.descriptors import NODECLAIMS
from karpy.controllers.nodeclaim.lifecycle import Lifecycle
from karpy.controllers.provisioning import Batcher, Provisioner
from karpy.kube import NODES, PODS, RealClock
from karpy.scheduling.resources import parse_resources, pod_requests
from tests.integration.provisioning.conftest import Env
from tests.integration.provisioning.support import condition, nodeclass, set_ready
from tests.kit import nodepool, pod

JSON = dict[str, Any]
TYPE = "c-4x-amd64-linux"  # 3900m allocatable: three 1-CPU pods


def _pods(prefix: str, n: int, namespace: str) -> list[JSON]:
    return [
        pod(f"{prefix}-{i}", namespace, requests={"cpu": "1", "memory": "1Gi"}) for i in range(n)
    ]


async def _until(check: Any, message: str) -> Any:
    async def probe() -> Any:
        return check()

    return await async_wait_until(probe, timeout=90, message=message)


async def test_a_later_batch_plans_onto_an_unregistered_node_only_what_still_fits(
    env: Env,
) -> None:
    env.kubectl.apply(nodeclass(delay="10m"))
    env.kubectl.apply(
        nodepool(
            requirements=[
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [TYPE]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            ],
            # the API's defaults, written out (the kit always sets them)
            policy="WhenEmptyOrUnderutilized",
            consolidate_after="0s",
        )
    )
    set_ready(env.kubectl, "nodepool", "pool")
    cluster = env.cluster
    await _until(
        lambda: (cluster.nodepool_informer.get("pool") or {}).get("status"), "NodePool cached"
    )
    provisioner = Provisioner(
        client=env.client,
        cluster=cluster,
        cloud_provider=env.kwok,
        events=env.events,
        batcher=Batcher(idle=1.0, maximum=10.0),
    )
    lifecycle = Lifecycle(
        client=env.client,
        claims=env.cache.informer(NODECLAIMS),
        nodes=env.cache.informer(NODES),
        cloud_provider=env.kwok,
        events=env.events,
        launch_timeout=timedelta(minutes=5),
        registration_timeout=timedelta(minutes=15),
        health=cluster.nodepool_health,
        cluster=cluster,
        pods=env.cache.informer(PODS),
        clock=RealClock(),
    )

    # Batch 1: two 1-CPU pods on one new NodeClaim, launched; its Node is 10 minutes away.
    env.kubectl.apply(_pods("first", 2, env.namespace))
    await _until(lambda: len(cluster.provisionable_pods()) == 2, "2 unschedulable pods")
    (first,) = await provisioner.provision()

    async def launched() -> JSON | None:
        await lifecycle.reconcile(first)
        claim = env.cache.informer(NODECLAIMS).get(first)
        return claim if condition(claim, "Launched") == "True" else None

    claim: JSON = await async_wait_until(launched, timeout=60, interval=0.3, message="launched")
    await _until(cluster.synced, "synced once launched")
    assert condition(claim, "Registered") != "True"
    assert not (await env.client.list(NODES)).items, "the Node has not registered"
    allocatable = parse_resources(claim["status"]["allocatable"])

    # Batch 2: three more. The in-flight node has room for one of them, not three.
    env.kubectl.apply(_pods("second", 3, env.namespace))
    await _until(lambda: len(cluster.provisionable_pods()) == 5, "5 unschedulable pods")
    created = await provisioner.provision()

    inflight = cluster.node_for_nodeclaim(first)
    assert inflight is not None and inflight.node is None
    pods = env.cache.informer(PODS)
    planned = [pods.get(key) for key in cluster.take_plan(first)]
    on_it = sorted(p["metadata"]["name"] for p in planned if p is not None)
    cpu = sum(pod_requests(p["spec"]).get("cpu", 0) for p in planned if p is not None)
    assert cpu <= allocatable["cpu"], f"{on_it} planned onto a node with {allocatable['cpu']}m"
    assert len(on_it) == 3, f"the free room is used: {on_it}"
    assert len(created) == 1, "the two pods left over get a new NodeClaim"
    cluster.record_plan(first, [f"{env.namespace}/{name}" for name in on_it])
    everyone = {
        f"{env.namespace}/{p}-{i}" for p, n in (("first", 2), ("second", 3)) for i in range(n)
    }
    assert everyone <= cluster.planned_pods()


async def test_pods_nominated_to_a_node_count_as_on_their_way(env: Env) -> None:
    env.kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "plain-1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"}},
        }
    )
    (nominated,) = _pods("nominated", 1, env.namespace)
    nominated["spec"]["schedulerName"] = "nobody"  # kube-scheduler leaves it alone
    await env.client.create(PODS, nominated)
    await env.client.patch_status(
        PODS,
        "nominated-0",
        {"status": {"nominatedNodeName": "plain-1"}},
        namespace=env.namespace,
    )

    def planned() -> list[str]:
        node = env.cluster.node("plain-1")
        return [p["metadata"]["name"] for p in node.planned] if node is not None else []

    await _until(lambda: planned() == ["nominated-0"], "the nominated pod on its way to the node")
    node = env.cluster.node("plain-1")
    assert node is not None and node.pods == ()
    assert node.available["cpu"] == 4000, "bound pods only: disruption's view is unchanged"
