"""`Consolidatable` timing on a fake clock, and `lastPodEventTime` from real pod transitions."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.controllers.nodeclaim.disruption import ConsolidatableController
from karpy.controllers.nodeclaim.podevents import PodEventsController
from karpy.kube import NODES, PODS, FakeClock
from tests.integration.disruption.support import Env, create_node, initialized
from tests.kit import conditions, kwok_nodeclass, nodeclaim, nodepool

pytestmark = pytest.mark.timeout(120)
START = datetime(2026, 1, 1, tzinfo=UTC)


async def _marking(env: Env, clock: FakeClock) -> ConsolidatableController:
    return ConsolidatableController(
        client=env.client,
        nodeclaims=await env.informer(NODECLAIMS),
        nodepools=await env.informer(NODEPOOLS),
        clock=clock,
    )


async def _pool_and_claim(
    env: Env, *, consolidate_after: str, initialized_at: str | None = "2026-01-01T00:00:00Z"
) -> None:
    """The default KWOKNodeClass, NodePool `pool` and its NodeClaim `claim`, Initialized at
    `initialized_at` (None: not initialized)."""
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool(consolidate_after=consolidate_after))
    await env.create(NODECLAIMS, nodeclaim("claim"))
    if initialized_at is not None:
        await env.patch_status(NODECLAIMS, "claim", initialized(initialized_at))


def _consolidatable(claim: dict[str, object]) -> bool:
    return "Consolidatable" in conditions(claim)  # type: ignore[arg-type]


async def test_consolidatable_after_consolidate_after_since_initialization(env: Env) -> None:
    clock = FakeClock(wall_start=START)
    marking = await _marking(env, clock)
    await _pool_and_claim(env, consolidate_after="30s")
    await env.cached(marking.nodeclaims, "claim", lambda c: "Initialized" in conditions(c))
    await env.cached(marking.nodepools, "pool", lambda p: True)

    result = await marking.reconcile("claim")
    assert result is not None and result.requeue_after == pytest.approx(30.0)
    assert not _consolidatable(await env.get(NODECLAIMS, "claim"))

    clock.advance(29)
    result = await marking.reconcile("claim")
    assert result is not None and result.requeue_after == pytest.approx(1.0)

    clock.advance(1)
    assert await marking.reconcile("claim") is None
    claim = await env.get(NODECLAIMS, "claim")
    assert conditions(claim)["Consolidatable"]["status"] == "True"
    assert conditions(claim)["Consolidatable"]["lastTransitionTime"] == "2026-01-01T00:00:30Z"


async def test_pod_event_restarts_the_clock_and_never_clears(env: Env) -> None:
    clock = FakeClock(wall_start=START)
    marking = await _marking(env, clock)
    await _pool_and_claim(env, consolidate_after="1m")
    await env.cached(marking.nodepools, "pool", lambda p: True)
    clock.advance(120)
    await env.cached(marking.nodeclaims, "claim", lambda c: "Initialized" in conditions(c))
    await marking.reconcile("claim")
    await env.cached(marking.nodeclaims, "claim", _consolidatable)

    # A pod arrived 10 s ago: not consolidatable for another 50 s.
    await env.patch_status(NODECLAIMS, "claim", {"lastPodEventTime": "2026-01-01T00:01:50Z"})
    await env.cached(
        marking.nodeclaims, "claim", lambda c: bool(c["status"].get("lastPodEventTime"))
    )
    result = await marking.reconcile("claim")
    assert result is not None and result.requeue_after == pytest.approx(50.0)
    claim = await env.cached(marking.nodeclaims, "claim", lambda c: not _consolidatable(c))
    assert conditions(claim)["Initialized"]["status"] == "True"  # other conditions kept

    # consolidateAfter: Never clears it for good.
    clock.advance(60)
    await marking.reconcile("claim")
    await env.cached(marking.nodeclaims, "claim", _consolidatable)
    await env.client.patch(
        NODEPOOLS, "pool", {"spec": {"disruption": {"consolidateAfter": "Never"}}}
    )
    await env.cached(
        marking.nodepools,
        "pool",
        lambda p: p["spec"]["disruption"]["consolidateAfter"] == "Never",
    )
    assert await marking.reconcile("claim") is None
    await env.cached(marking.nodeclaims, "claim", lambda c: not _consolidatable(c))


async def test_not_initialized_is_never_consolidatable(env: Env) -> None:
    clock = FakeClock(wall_start=START)
    marking = await _marking(env, clock)
    await _pool_and_claim(env, consolidate_after="0s", initialized_at=None)
    await env.cached(marking.nodeclaims, "claim", lambda c: True)
    await env.cached(marking.nodepools, "pool", lambda p: True)
    clock.advance(3600)
    assert await marking.reconcile("claim") is None
    assert not _consolidatable(await env.get(NODECLAIMS, "claim"))


async def test_controller_requeues_itself_at_the_consolidatable_moment(env: Env) -> None:
    clock = FakeClock(wall_start=START)
    marking = await _marking(env, clock)
    env.run(marking)
    await _pool_and_claim(env, consolidate_after="30s")
    await env.cached(marking.nodeclaims, "claim", lambda c: "Initialized" in conditions(c))
    await asyncio.sleep(1.0)  # the controller has looked and asked to come back in 30 s
    assert not _consolidatable(marking.nodeclaims.get("claim") or {})
    await clock.step(30)
    await env.cached(marking.nodeclaims, "claim", _consolidatable)


async def test_pod_binding_and_termination_stamp_last_pod_event_time(
    env: Env, namespace: str
) -> None:
    clock = FakeClock(wall_start=START)
    pods = await env.informer(PODS)
    nodes = await env.informer(NODES)
    claims = await env.informer(NODECLAIMS)
    controller = PodEventsController(
        client=env.client, pods=pods, nodes=nodes, nodeclaims=claims, clock=clock
    )
    env.run(controller)
    await env.create(NODECLAIMS, nodeclaim("claim"))
    await env.patch_status(NODECLAIMS, "claim", {"providerID": "kwok://events-node"})
    await create_node(env, "events-node", provider_id="kwok://events-node")
    await env.cached(claims, "claim", lambda c: bool((c.get("status") or {}).get("providerID")))
    await env.cached(nodes, "events-node", lambda n: bool(n.get("status")))

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
            "terminationGracePeriodSeconds": 30,
        },
    }
    await env.client.create(PODS, pod, namespace=namespace)
    # kube-scheduler binds it to the only node: a pod event at the fake clock's time.
    claim = await env.cached(
        claims, "claim", lambda c: bool((c.get("status") or {}).get("lastPodEventTime"))
    )
    assert claim["status"]["lastPodEventTime"] == "2026-01-01T00:00:00Z"

    # Within 10 s another event is deduplicated; after it, termination stamps the new time.
    clock.advance(5)
    await env.client.delete(PODS, "web", namespace=namespace)
    await asyncio.sleep(1.0)
    assert (claims.get("claim") or {})["status"]["lastPodEventTime"] == "2026-01-01T00:00:00Z"
    clock.advance(60)
    await env.client.create(
        PODS, {**pod, "metadata": {"name": "web2", "namespace": namespace}}, namespace=namespace
    )
    await env.cached(
        claims,
        "claim",
        lambda c: c["status"]["lastPodEventTime"] == "2026-01-01T00:01:05Z",
    )
