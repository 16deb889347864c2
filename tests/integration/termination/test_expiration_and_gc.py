"""Expiration and garbage collection against a real apiserver: expired NodeClaims are deleted at
the moment they expire (on a fake clock), NodeClaims whose instance vanished are collected unless
their Node is Ready, and instances without a NodeClaim are terminated once 30 s old."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubetest import now_rfc3339

from karpy.controllers.common.objects import NODECLAIMS
from karpy.controllers.garbagecollection import (
    InstanceGarbageCollection,
    NodeClaimGarbageCollection,
)
from karpy.controllers.nodeclaim.expiration import ExpirationController
from karpy.kube import NODES, FakeClock, RealClock
from tests.integration.termination.support import Env
from tests.kit import claim_spec, ready_claim_conditions

pytestmark = pytest.mark.timeout(120)
JSON = dict[str, Any]


async def _claim(
    env: Env,
    name: str,
    *,
    expire_after: str | None = None,
    provider_id: str | None = None,
    registered: bool = True,
) -> JSON:
    extra = {"expireAfter": expire_after} if expire_after else {}
    created = await env.client.create(
        NODECLAIMS,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "gc-pool"}},
            "spec": claim_spec(**extra),
        },
    )
    if provider_id is None:
        return created
    conditions = (
        ready_claim_conditions(now_rfc3339())
        if registered
        else [
            {
                "type": "Launched",
                "status": "True",
                "reason": "Launched",
                "message": "",
                "lastTransitionTime": now_rfc3339(),
            }
        ]
    )
    return await env.client.patch_status(
        NODECLAIMS, name, {"status": {"providerID": provider_id, "conditions": conditions}}
    )


async def _node(env: Env, name: str, provider_id: str, *, ready: bool) -> None:
    await env.client.create(
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "spec": {"providerID": provider_id},
        },
    )
    status = "True" if ready else "False"
    await env.client.patch_status(
        NODES,
        name,
        {
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": status,
                        "reason": "Test",
                        "message": "",
                        "lastHeartbeatTime": now_rfc3339(),
                        "lastTransitionTime": now_rfc3339(),
                    }
                ]
            }
        },
    )


async def test_expired_nodeclaims_are_deleted_when_they_expire(env: Env) -> None:
    clock = FakeClock(wall_start=datetime.now(UTC))
    disrupted: list[tuple[str, str]] = []
    claims = await env.informer(NODECLAIMS)
    expiration = ExpirationController(
        client=env.client,
        nodeclaims=claims,
        clock=clock,
        on_disrupted=lambda claim, reason: disrupted.append((claim["metadata"]["name"], reason)),
    )
    env.run(expiration)
    await _claim(env, "hourly", expire_after="1h")
    await _claim(env, "daily", expire_after="24h")
    await _claim(env, "forever", expire_after="Never")
    await env.until(lambda: len(claims.list()) == 3, message="claims cached")
    await env.until(lambda: clock.pending >= 2, message="expiry requeues scheduled")

    await clock.step(3500)
    await asyncio.sleep(1)
    assert not await env.gone(NODECLAIMS, "hourly"), "deleted before it expired"

    await clock.step(120)
    await env.until(lambda: env.gone(NODECLAIMS, "hourly"), message="hourly to be deleted")
    # The apiserver has the deletion before the controller reads its reply and reports it.
    await env.until(lambda: disrupted, message="the expiry to be reported")
    assert disrupted == [("hourly", "expired")]
    assert not await env.gone(NODECLAIMS, "daily")
    assert not await env.gone(NODECLAIMS, "forever")

    await clock.step(24 * 3600)
    await env.until(lambda: env.gone(NODECLAIMS, "daily"), message="daily to be deleted")
    await env.until(lambda: len(disrupted) >= 2, message="the second expiry to be reported")
    await asyncio.sleep(0.5)
    assert not await env.gone(NODECLAIMS, "forever")
    assert [name for name, _ in disrupted] == ["hourly", "daily"]


async def test_nodeclaims_whose_instance_is_gone_are_collected(env: Env) -> None:
    nodes = await env.informer(NODES)
    disrupted: list[tuple[str, str]] = []
    gc = NodeClaimGarbageCollection(
        client=env.client,
        nodes=nodes,
        cloud_provider=env.cloud,
        clock=RealClock(),
        on_disrupted=lambda claim, reason: disrupted.append((claim["metadata"]["name"], reason)),
    )
    await _claim(env, "vanished", provider_id="test://vanished")
    await _claim(env, "still-ready", provider_id="test://still-ready")
    await _node(env, "still-ready", "test://still-ready", ready=True)
    await _claim(env, "unregistered", provider_id="test://unregistered", registered=False)
    await _claim(env, "alive", provider_id="test://alive")
    env.cloud.add("test://alive", claim_name="alive")
    await _claim(env, "not-ready", provider_id="test://not-ready")
    await _node(env, "not-ready", "test://not-ready", ready=False)
    await env.until(lambda: len(nodes.list()) == 2, message="nodes cached")

    result = await gc.reconcile(gc.name)

    assert result.requeue_after == 120.0
    assert await env.gone(NODECLAIMS, "vanished")
    assert await env.gone(NODECLAIMS, "not-ready")
    for kept in ("still-ready", "unregistered", "alive"):
        assert not await env.gone(NODECLAIMS, kept), kept
    assert sorted(disrupted) == [
        ("not-ready", "garbage_collected"),
        ("vanished", "garbage_collected"),
    ]


async def test_instances_without_a_nodeclaim_are_terminated_once_old_enough(env: Env) -> None:
    nodes = await env.informer(NODES)
    clock = FakeClock(wall_start=datetime.now(UTC))
    gc = InstanceGarbageCollection(
        client=env.client, nodes=nodes, cloud_provider=env.cloud, clock=clock
    )
    env.cloud.add("test://leaked", claim_name="ghost", age=timedelta(minutes=1))
    await _node(env, "leaked", "test://leaked", ready=True)
    env.cloud.add("test://fresh", claim_name="ghost-2", age=timedelta(seconds=1))
    env.cloud.add("test://owned", claim_name="whatever", age=timedelta(hours=1))
    await _claim(env, "owner", provider_id="test://owned")
    env.cloud.add("test://launching", claim_name="launching", age=timedelta(hours=1))
    await _claim(env, "launching")  # launched, but its status is not written yet
    env.cloud.add("test://ageless", claim_name="ghost-3", age=None)
    await env.until(lambda: nodes.get("leaked") is not None, message="node cached")

    await gc.reconcile(gc.name)

    assert set(env.cloud.instances) == {
        "test://fresh",
        "test://owned",
        "test://launching",
        "test://ageless",
    }
    await env.until(lambda: env.gone(NODES, "leaked"), message="the leaked instance's node")

    clock.advance(31)
    await gc.reconcile(gc.name)
    assert set(env.cloud.instances) == {"test://owned", "test://launching"}
