"""Pod nominations against a real kube-scheduler, and the kwok provider's NodeClass checks."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from kubetest import async_wait_until

from karpy.apis.objects import has_unregistered_taint
from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.types import InsufficientCapacityError, NodeClassNotReadyError
from karpy.controllers.provisioning import NominationJanitor, nominate_pods
from karpy.controllers.provisioning.nomination import (
    ROOM_RECHECK,
    awaiting_node,
    nominate_placements,
)
from karpy.kube import NODES, PODS, FakeClock
from karpy.kube.builder import build
from tests.integration.provisioning.conftest import Env
from tests.integration.provisioning.support import nodeclaim, nodeclass, set_ready
from tests.kit.wrapped import ClientWrapper

JSON = dict[str, Any]
ROOMY = {"cpu": "4", "memory": "8Gi", "pods": "110"}


async def test_nomination_is_set_and_cleared_when_it_no_longer_holds(env: Env) -> None:
    # A karpy node kube-scheduler cannot use (tainted), already initialized.
    env.kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "nominee",
                "labels": {"karpenter.sh/nodepool": "pool", "karpenter.sh/initialized": "true"},
            },
            "spec": {"taints": [{"key": "example.com/closed", "effect": "NoSchedule"}]},
        }
    )
    await env.client.patch_status(NODES, "nominee", {"status": {"allocatable": ROOMY}})
    await env.client.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "hopeful", "namespace": env.namespace},
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
        },
    )
    key = f"{env.namespace}/hopeful"
    pods = env.cache.informer(PODS)

    async def unschedulable() -> bool:
        return bool(pods.get(key)) and key in {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in env.cluster.provisionable_pods()
        }

    await async_wait_until(unschedulable, timeout=30, message="the pod to be unschedulable")
    await async_wait_until(
        lambda: _async(env.cache.informer(NODES).get("nominee")), timeout=30, message="node"
    )
    ledger: dict[str, str] = {}
    assert await nominate_pods(env.client, pods, [key, key], "nominee", ledger=ledger) == 1
    assert ledger == {key: "nominee"}
    live: JSON = await env.client.get(PODS, "hopeful", namespace=env.namespace)
    assert live["status"]["nominatedNodeName"] == "nominee"
    # Nominated pods are not provisionable (they are waiting for their node).
    await async_wait_until(
        lambda: _async(
            not any(p["metadata"]["name"] == "hopeful" for p in env.cluster.provisionable_pods())
        ),
        timeout=30,
        message="the nominated pod to leave the provisionable set",
    )
    # Nominating again does nothing: the pod already has a nomination.
    assert await nominate_pods(env.client, pods, [key], "elsewhere", ledger=ledger) == 0
    assert ledger == {key: "nominee"}

    clock = FakeClock()
    # A nomination karpy did not make (kube-scheduler's, for preemption) is never withdrawn
    # while its node exists, however long the pod stays unschedulable.
    strangers = NominationJanitor(
        client=env.client, pods=pods, nodes=env.cache.informer(NODES), ledger={}, clock=clock
    )
    assert await strangers.reconcile(key) is not None
    clock.advance(120)
    assert await strangers.reconcile(key) is not None
    live = await env.client.get(PODS, "hopeful", namespace=env.namespace)
    assert live["status"]["nominatedNodeName"] == "nominee"

    janitor = NominationJanitor(
        client=env.client, pods=pods, nodes=env.cache.informer(NODES), ledger=ledger, clock=clock
    )
    first = await janitor.reconcile(key)
    assert first is not None and first.requeue_after == pytest.approx(ROOM_RECHECK)
    clock.advance(31)
    assert await janitor.reconcile(key) is None
    live = await env.client.get(PODS, "hopeful", namespace=env.namespace)
    assert not live["status"].get("nominatedNodeName")
    assert ledger == {}


async def test_placements_on_many_nodes_are_nominated_in_one_pass(env: Env) -> None:
    names = ["a", "b", "c", "bound"]
    for name in names:
        await _unscheduled_pod(env, name, node_name="node-2" if name == "bound" else None)
    pods = env.cache.informer(PODS)
    keys = {name: f"{env.namespace}/{name}" for name in names}
    await async_wait_until(
        lambda: _async(all(pods.get(k) for k in keys.values())), timeout=30, message="pods cached"
    )
    ledger: dict[str, str] = {}
    placements = {"node-1": [keys["a"], keys["b"]], "node-2": [keys["c"], keys["bound"]]}
    assert await nominate_placements(env.client, pods, placements, ledger=ledger) == 3
    assert ledger == {keys["a"]: "node-1", keys["b"]: "node-1", keys["c"]: "node-2"}
    for name, node in (("a", "node-1"), ("b", "node-1"), ("c", "node-2")):
        live: JSON = await env.client.get(PODS, name, namespace=env.namespace)
        assert live["status"]["nominatedNodeName"] == node
    bound: JSON = await env.client.get(PODS, "bound", namespace=env.namespace)
    assert not bound["status"].get("nominatedNodeName"), "a bound pod is left alone"


class GatedClient(ClientWrapper):
    """The API client with status writes held until `open` is set: a nomination in flight."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.open = asyncio.Event()

    async def patch_status(self, *args: Any, **kwargs: Any) -> Any:
        await self.open.wait()
        return await self.inner.patch_status(*args, **kwargs)


async def test_the_ledger_names_the_node_while_the_nomination_is_written(env: Env) -> None:
    """A pod taken from its NodeClaim's plan is coming to the node only by its ledger entry
    until its nomination shows: the entry is there before the write, and put back as it was
    for pods that could not be nominated."""
    for name in ("planned", "bound", "taken"):
        await _unscheduled_pod(env, name, node_name="node-2" if name == "bound" else None)
    keys = {name: f"{env.namespace}/{name}" for name in ("planned", "bound", "taken")}
    await env.client.patch_status(
        PODS, "taken", {"status": {"nominatedNodeName": "node-3"}}, namespace=env.namespace
    )
    pods = env.cache.informer(PODS)
    await async_wait_until(
        lambda: _async(
            all(pods.get(k) for k in keys.values()) and _nominated(pods.get(keys["taken"]))
        ),
        timeout=30,
        message="pods cached",
    )
    ledger = {keys["taken"]: "node-3"}
    client = GatedClient(env.client)
    writing = asyncio.create_task(
        nominate_placements(client, pods, {"node-1": list(keys.values())}, ledger=ledger)  # type: ignore[arg-type]
    )
    await asyncio.sleep(0.2)
    assert not writing.done()  # the write for "planned" is held; the others need none
    expected = {keys["planned"]: "node-1", keys["taken"]: "node-3"}
    assert ledger == expected

    client.open.set()
    assert await writing == 1
    assert ledger == expected
    live: JSON = await env.client.get(PODS, "planned", namespace=env.namespace)
    assert live["status"]["nominatedNodeName"] == "node-1"


async def test_a_nomination_cleared_before_the_node_takes_pods_is_restored_once(
    env: Env,
) -> None:
    """kube-scheduler clears a nomination when it tries the pod while the node still has the
    unregistered taint, or is registered but not initialized; karpy puts it back once the node
    is initialized. A nomination cleared after that means the pod did not fit: it is let go,
    and the pod is provisioned for again."""
    node_name = "registering"
    env.kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node_name, "labels": {"karpenter.sh/nodepool": "pool"}},
            "spec": {"taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]},
        }
    )
    await env.client.patch_status(NODES, node_name, {"status": {"allocatable": ROOMY}})
    await _unscheduled_pod(env, "planned")
    key = f"{env.namespace}/planned"
    pods, nodes = env.cache.informer(PODS), env.cache.informer(NODES)
    await async_wait_until(
        lambda: _async(bool(pods.get(key)) and bool(nodes.get(node_name))),
        timeout=30,
        message="pod and node cached",
    )
    ledger: dict[str, str] = {}
    assert await nominate_pods(env.client, pods, [key], node_name, ledger=ledger) == 1
    janitor = NominationJanitor(client=env.client, pods=pods, nodes=nodes, ledger=ledger)
    stop = asyncio.Event()
    runner = asyncio.create_task(build(janitor).start(stop))

    async def nomination() -> str:
        live: JSON = await env.client.get(PODS, "planned", namespace=env.namespace)
        return str(live["status"].get("nominatedNodeName") or "")

    async def scheduler_clears() -> None:
        await env.client.patch_status(
            PODS, "planned", {"status": {"nominatedNodeName": None}}, namespace=env.namespace
        )

    try:
        await scheduler_clears()
        await async_wait_until(
            lambda: _async(not _nominated(pods.get(key))), timeout=30, message="cleared"
        )
        await asyncio.sleep(1.0)  # the janitor has seen it; the node is still unregistered
        assert await nomination() == ""
        assert ledger == {key: node_name}
        assert awaiting_node(key, ledger, nodes), "no new plan while it waits"

        await env.client.patch(NODES, node_name, {"spec": {"taints": None}})
        await async_wait_until(
            lambda: _async(not has_unregistered_taint(nodes.get(node_name) or {})),
            timeout=30,
            message="registered in the cache",
        )
        await asyncio.sleep(1.0)  # the janitor has seen it; the node is not initialized yet
        assert await nomination() == "", "not restored before the node takes pods"
        assert awaiting_node(key, ledger, nodes), "no new plan while it initializes"

        initialized = {"metadata": {"labels": {"karpenter.sh/initialized": "true"}}}
        await env.client.patch(NODES, node_name, initialized)

        async def restored() -> bool:
            return await nomination() == node_name

        await async_wait_until(restored, timeout=30, message="the nomination to be restored")
        assert not awaiting_node(key, ledger, nodes)

        await async_wait_until(
            lambda: _async(_nominated(pods.get(key)) == node_name), timeout=30, message="cached"
        )
        await scheduler_clears()
        await async_wait_until(
            lambda: _async(not _nominated(pods.get(key))), timeout=30, message="cleared again"
        )
        await asyncio.sleep(1.0)  # the janitor has seen it
        assert await nomination() == "", "a nomination cleared after registration stays cleared"
        assert not awaiting_node(key, ledger, nodes), "the pod is let go: provisioned for again"
    finally:
        stop.set()
        await asyncio.wait_for(runner, 10)


async def test_a_nomination_the_cache_has_not_shown_yet_is_still_withdrawn(env: Env) -> None:
    """karpy nominates a pod just before its node registers, and the node can be initialized
    before the pod's cache shows the nomination. The janitor, woken by an older version of the
    pod, must not take the nomination for someone else's: once the pod stays unschedulable on
    that (ready) node, the nomination is withdrawn after the grace period, not left to
    kube-scheduler's 5-minute retry."""
    node_name = "ready-early"
    await _ready_node(env, node_name)
    await _unscheduled_pod(env, "late")
    key = f"{env.namespace}/late"
    pods, nodes = env.cache.informer(PODS), env.cache.informer(NODES)
    await async_wait_until(
        lambda: _async(bool(pods.get(key)) and _has_allocatable(nodes.get(node_name))),
        timeout=30,
        message="pod and node cached",
    )
    clock = FakeClock()
    ledger = {key: node_name}  # written by karpy, not yet seen in the cache
    janitor = NominationJanitor(
        client=env.client, pods=pods, nodes=nodes, ledger=ledger, clock=clock
    )
    assert await janitor.reconcile(key) is None
    assert ledger == {key: node_name}, "the nomination on its way is still karpy's"

    await env.client.patch_status(
        PODS,
        "late",
        {
            "status": {
                "nominatedNodeName": node_name,
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ],
            }
        },
        namespace=env.namespace,
    )
    await async_wait_until(
        lambda: _async(_nominated(pods.get(key)) == node_name), timeout=30, message="cached"
    )
    first = await janitor.reconcile(key)
    assert first is not None and first.requeue_after == pytest.approx(ROOM_RECHECK)
    clock.advance(31)
    assert await janitor.reconcile(key) is None
    live: JSON = await env.client.get(PODS, "late", namespace=env.namespace)
    assert not live["status"].get("nominatedNodeName")
    assert ledger == {}


async def test_a_nomination_to_a_node_others_filled_is_withdrawn_at_once(env: Env) -> None:
    """Pods karpy did not plan there can take a new node's room before kube-scheduler retries
    the nominated pod, and it may not retry it for minutes: karpy's nomination goes as soon as
    the pods bound to the ready node leave too little for it, without the grace period."""
    node_name = "filling"
    await _ready_node(env, node_name)

    def three_cpu_pod(name: str, node: str | None = None) -> JSON:
        spec: JSON = {
            "schedulerName": "nobody",
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "3"}}}
            ],
        }
        if node:
            spec["nodeName"] = node
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}

    await env.client.create(PODS, three_cpu_pod("planned"), namespace=env.namespace)
    key = f"{env.namespace}/planned"
    pods, nodes = env.cache.informer(PODS), env.cache.informer(NODES)
    await async_wait_until(
        lambda: _async(bool(pods.get(key)) and _has_allocatable(nodes.get(node_name))),
        timeout=30,
        message="pod and node cached",
    )
    ledger: dict[str, str] = {}
    assert await nominate_pods(env.client, pods, [key], node_name, ledger=ledger) == 1
    await async_wait_until(
        lambda: _async(_nominated(pods.get(key)) == node_name), timeout=30, message="cached"
    )
    janitor = NominationJanitor(client=env.client, pods=pods, nodes=nodes, ledger=ledger)
    first = await janitor.reconcile(key)
    assert first is not None and first.requeue_after == pytest.approx(ROOM_RECHECK)
    assert _nominated(await env.client.get(PODS, "planned", namespace=env.namespace)) == node_name

    await env.client.create(PODS, three_cpu_pod("intruder", node_name), namespace=env.namespace)
    await async_wait_until(
        lambda: _async(bool(pods.get(f"{env.namespace}/intruder"))), timeout=30, message="bound"
    )
    assert await janitor.reconcile(key) is None
    assert not _nominated(await env.client.get(PODS, "planned", namespace=env.namespace))
    assert ledger == {}


async def test_a_nomination_survives_a_stale_cached_pod(env: Env) -> None:
    """kube-scheduler rewrites pending pods' status all the time, so the cached copy is often
    a version behind: the nomination looks again instead of giving up."""
    await _unscheduled_pod(env, "busy")
    key = f"{env.namespace}/busy"
    stale: JSON = await env.client.get(PODS, "busy", namespace=env.namespace)
    await env.client.patch(
        PODS, "busy", {"metadata": {"labels": {"touched": "yes"}}}, namespace=env.namespace
    )

    class StaleCache:
        """The pod informer as it is a moment behind the server."""

        def get(self, wanted: str) -> JSON | None:
            return copy.deepcopy(stale) if wanted == key else None

    ledger: dict[str, str] = {}
    assert await nominate_pods(env.client, StaleCache(), [key], "node-x", ledger=ledger) == 1  # type: ignore[arg-type]
    assert ledger == {key: "node-x"}
    live: JSON = await env.client.get(PODS, "busy", namespace=env.namespace)
    assert live["status"]["nominatedNodeName"] == "node-x"
    assert live["metadata"]["labels"] == {"touched": "yes"}


async def _unscheduled_pod(env: Env, name: str, *, node_name: str | None = None) -> None:
    """A pod kube-scheduler leaves alone (another scheduler's): the test plays its part."""
    spec: JSON = {"schedulerName": "nobody", "containers": [{"name": "c", "image": "pause"}]}
    if node_name:
        spec["nodeName"] = node_name
    await env.client.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": env.namespace},
            "spec": spec,
        },
    )


async def _ready_node(env: Env, name: str) -> None:
    """An initialized karpy Node with room (ROOMY), as kube-scheduler would see it."""
    env.kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"karpenter.sh/nodepool": "pool", "karpenter.sh/initialized": "true"},
            },
        }
    )
    await env.client.patch_status(NODES, name, {"status": {"allocatable": ROOMY}})


def _has_allocatable(node: JSON | None) -> bool:
    return bool(((node or {}).get("status") or {}).get("allocatable"))


def _nominated(pod: JSON | None) -> str:
    return str(((pod or {}).get("status") or {}).get("nominatedNodeName") or "")


async def _async(value: Any) -> Any:
    return value


async def test_kwok_nodeclass_must_exist_and_be_ready(env: Env) -> None:
    claim = NodeClaim.model_validate(
        {**nodeclaim("nc-check"), "metadata": {"name": "nc-check", "uid": "u"}}
    )
    with pytest.raises(InsufficientCapacityError, match="not found"):
        await env.kwok.create(claim)
    env.kubectl.apply(nodeclass())
    set_ready(env.kubectl, "kwoknodeclass", "default", ready=False, reason="Broken")

    async def cached_not_ready() -> bool:
        found = env.kwok.nodeclasses.get("default") or {}
        return any(
            c.get("status") == "False" for c in found.get("status", {}).get("conditions", [])
        )

    await async_wait_until(cached_not_ready, timeout=30, message="the NodeClass not Ready")
    with pytest.raises(NodeClassNotReadyError, match="not ready"):
        await env.kwok.create(claim)
    assert not (await env.client.list(NODES)).items
