"""The NodeClaim lifecycle with the kwok provider, in-process against the real control plane:
launch, registration, initialization, liveness timeouts (fake clock), and the kwok simulator."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kubetest import async_wait_until

from karpy.apis.descriptors import NODECLAIMS
from karpy.cloudprovider.faults import ALL, FaultPlan, FaultyCloudProvider
from karpy.cloudprovider.kwok.simulator import KwokSimulator
from karpy.cloudprovider.types import CloudProvider, CloudProviderError
from karpy.controllers.common.metrics import NODECLAIMS_DISRUPTED_TOTAL
from karpy.controllers.nodeclaim.lifecycle import Lifecycle
from karpy.kube import NODES, PODS, Clock, FakeClock, RealClock
from tests.integration.provisioning.conftest import Env
from tests.integration.provisioning.support import condition, nodeclaim, nodeclass

JSON = dict[str, Any]


def _lifecycle(env: Env, provider: CloudProvider, clock: Clock) -> Lifecycle:
    return Lifecycle(
        client=env.client,
        claims=env.cache.informer(NODECLAIMS),
        nodes=env.cache.informer(NODES),
        cloud_provider=provider,
        events=env.events,
        launch_timeout=timedelta(minutes=5),
        registration_timeout=timedelta(minutes=15),
        health=env.cluster.nodepool_health,
        cluster=env.cluster,
        pods=env.cache.informer(PODS),
        clock=clock,
    )


async def _cached(env: Env, name: str, check: Callable[[JSON], bool]) -> JSON:
    async def probe() -> JSON | None:
        obj = env.cache.informer(NODECLAIMS).get(name)
        return obj if obj is not None and check(obj) else None

    found: JSON = await async_wait_until(probe, timeout=90, message=f"NodeClaim {name}")
    return found


async def _reconcile_until(
    lifecycle: Lifecycle, env: Env, name: str, check: Callable[[JSON], bool]
) -> JSON:
    async def step() -> JSON | None:
        await lifecycle.reconcile(name)
        obj = env.cache.informer(NODECLAIMS).get(name)
        return obj if obj is not None and check(obj) else None

    result: JSON = await async_wait_until(step, timeout=60, interval=0.3, message=name)
    return result


async def _create(env: Env, claim: JSON) -> JSON:
    created: JSON = await env.client.create(NODECLAIMS, claim)
    await _cached(env, claim["metadata"]["name"], lambda _: True)
    return created


async def test_launch_register_initialize(env: Env) -> None:
    env.kubectl.apply(nodeclass())
    await _create(env, nodeclaim("life-1"))
    lifecycle = _lifecycle(env, env.kwok, RealClock())

    claim = await _reconcile_until(
        lifecycle, env, "life-1", lambda c: condition(c, "Registered") == "True"
    )
    assert "karpenter.sh/termination" in claim["metadata"]["finalizers"]
    status = claim["status"]
    assert status["providerID"] == "kwok://life-1" and status["nodeName"] == "life-1"
    assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    assert condition(claim, "Launched") == "True"
    # The startup taint holds initialization back until something removes it.
    assert condition(claim, "Initialized") == "Unknown"
    node: JSON = await env.client.get(NODES, "life-1")
    assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
    assert "karpenter.sh/termination" in node["metadata"]["finalizers"]
    assert node["metadata"]["ownerReferences"][0]["name"] == "life-1"
    # kwok's own convention, as Karpenter's kwok provider's Nodes carry it
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    taints = [t["key"] for t in node["spec"].get("taints", [])]
    assert "karpenter.sh/unregistered" not in taints and "example.com/agent" in taints

    env.kubectl(
        "patch",
        "node",
        "life-1",
        "--type=json",
        "--patch",
        '[{"op": "replace", "path": "/spec/taints", "value": []}]',
    )
    claim = await _reconcile_until(
        lifecycle, env, "life-1", lambda c: condition(c, "Ready") == "True"
    )
    assert condition(claim, "Initialized") == "True"
    node = await env.client.get(NODES, "life-1")
    assert node["metadata"]["labels"]["karpenter.sh/initialized"] == "true"
    nodes = (await env.client.list(NODES)).items
    assert [n["metadata"]["name"] for n in nodes] == ["life-1"]


async def test_missing_nodeclass_deletes_the_nodeclaim(env: Env) -> None:
    await _create(env, nodeclaim("life-ice", nodeclass_name="absent"))
    lifecycle = _lifecycle(env, env.kwok, RealClock())
    await lifecycle.reconcile("life-ice")
    claim: JSON = await env.client.get(NODECLAIMS, "life-ice")
    assert claim["metadata"].get("deletionTimestamp"), "the NodeClaim is being deleted"
    await env.events.flush()
    reasons = env.kubectl(
        "get",
        "events",
        "--all-namespaces",
        "--field-selector=involvedObject.name=life-ice",
        "-o",
        "jsonpath={.items[*].reason}",
    ).stdout.split()
    assert "InsufficientCapacityError" in reasons


def _disrupted(reason: str) -> float:
    return sum(
        sample.value
        for metric in NODECLAIMS_DISRUPTED_TOTAL.collect()
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("reason") == reason
    )


async def _expire(
    env: Env, name: str, provider: CloudProvider, limit: timedelta, stage: str
) -> None:
    reason = "launch_timeout" if stage == "Launched" else "registration_timeout"
    counted = _disrupted(reason)
    clock = FakeClock(wall_start=datetime.now(UTC))
    lifecycle = _lifecycle(env, provider, clock)

    async def first() -> JSON | None:
        with contextlib.suppress(CloudProviderError):  # written, then retried
            await lifecycle.reconcile(name)
        obj = env.cache.informer(NODECLAIMS).get(name)
        return (
            obj
            if condition(obj, stage) == "Unknown" and obj.get("status", {}).get("conditions")
            else None
        )

    await async_wait_until(first, timeout=30, message=f"{stage} Unknown on {name}")
    clock.advance(limit.total_seconds() - 5)
    with contextlib.suppress(CloudProviderError):
        await lifecycle.reconcile(name)
    claim: JSON = await env.client.get(NODECLAIMS, name)
    assert not claim["metadata"].get("deletionTimestamp"), "deleted before its timeout"
    clock.advance(10)
    await lifecycle.reconcile(name)
    claim = await env.client.get(NODECLAIMS, name)
    assert claim["metadata"].get("deletionTimestamp"), "not deleted after its timeout"
    assert _disrupted(reason) == counted + 1


async def test_launch_timeout_deletes_the_nodeclaim(env: Env) -> None:
    env.kubectl.apply(nodeclass())
    await _create(env, nodeclaim("life-launch"))
    faulty = FaultyCloudProvider(env.kwok, FaultPlan(create_errors=ALL))
    await _expire(env, "life-launch", faulty, timedelta(minutes=5), "Launched")
    assert not (await env.client.list(NODES)).items
    failure = env.cluster.nodepool_health.last_failure("pool")
    assert failure is not None and failure.reason == "FaultInjected"


async def test_registration_timeout_deletes_the_nodeclaim(env: Env) -> None:
    env.kubectl.apply(nodeclass())
    await _create(env, nodeclaim("life-register"))
    phantom = FaultyCloudProvider(env.kwok, FaultPlan(never_register=ALL))
    await _expire(env, "life-register", phantom, timedelta(minutes=15), "Registered")
    failure = env.cluster.nodepool_health.last_failure("pool")
    assert failure is not None and failure.reason == "RegistrationFailed"


async def test_registration_delay_is_served_by_the_simulator(env: Env) -> None:
    env.kubectl.apply(nodeclass(delay="30s"))
    await _create(env, nodeclaim("life-delay"))
    clock = FakeClock(wall_start=datetime.now(UTC))
    lifecycle = _lifecycle(env, env.kwok, clock)
    simulator = KwokSimulator(
        client=env.client, cache=env.cache, provider=env.kwok, nodeclaims=NODECLAIMS, clock=clock
    )
    await _reconcile_until(
        lifecycle, env, "life-delay", lambda c: condition(c, "Launched") == "True"
    )
    result = await simulator.reconcile_instance("life-delay")
    assert result is not None and 0 < (result.requeue_after or 0) <= 30
    assert not (await env.client.list(NODES)).items, "no instance before the delay"
    clock.advance(31)
    assert await simulator.reconcile_instance("life-delay") is None
    node: JSON = await env.client.get(NODES, "life-delay")
    assert node["spec"]["providerID"] == "kwok://life-delay"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    # A second pass (e.g. after a restart) creates nothing more.
    await simulator.reconcile_instance("life-delay")
    assert len((await env.client.list(NODES)).items) == 1


async def test_simulator_runs_and_finishes_pods(env: Env) -> None:
    env.kubectl.apply(nodeclass())
    await _create(env, nodeclaim("life-pods"))
    lifecycle = _lifecycle(env, env.kwok, RealClock())
    await _reconcile_until(
        lifecycle, env, "life-pods", lambda c: condition(c, "Registered") == "True"
    )
    simulator = KwokSimulator(
        client=env.client, cache=env.cache, provider=env.kwok, nodeclaims=NODECLAIMS
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sim", "namespace": env.namespace},
        "spec": {
            "nodeName": "life-pods",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "pause"}],
        },
    }
    await env.client.create(PODS, pod)
    key = f"{env.namespace}/sim"
    pods = env.cache.informer(PODS)
    await async_wait_until(_present(pods.get, key), timeout=30, message="pod in cache")
    await simulator.reconcile_pod(key)
    live: JSON = await env.client.get(PODS, "sim", namespace=env.namespace)
    assert live["status"]["phase"] == "Running"
    assert condition(live, "Ready") == "True" and live["status"]["podIP"]

    await env.client.delete(PODS, "sim", namespace=env.namespace)
    await async_wait_until(
        _present(lambda k: (pods.get(k) or {}).get("metadata", {}).get("deletionTimestamp"), key),
        timeout=30,
        message="pod terminating in cache",
    )
    await simulator.reconcile_pod(key)
    remaining = (await env.client.list(PODS, namespace=env.namespace)).items
    assert not remaining, "the terminating pod was finished"


def _present(get: Callable[[str], Any], key: str) -> Callable[[], Awaitable[Any]]:
    async def probe() -> Any:
        return get(key)

    return probe
