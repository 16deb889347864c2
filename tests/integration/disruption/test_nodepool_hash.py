"""The `nodepool.hash` controller against a real apiserver: NodePools get Karpenter's hash and
version (a cluster stamped by Karpenter is left as it is, so no node drifts on migration), and on
a hash version change the NodeClaims are re-stamped as Karpenter re-stamps them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from karpy.apis.descriptors import NODECLAIMS, NODEPOOLS
from karpy.apis.v1.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
)
from karpy.controllers.nodepool.hash import nodepool_hash
from karpy.controllers.nodepool.hashcontroller import NodePoolHashController
from karpy.kube import ConflictError
from tests.integration.disruption.support import Env
from tests.kit import nodeclaim, nodepool

pytestmark = pytest.mark.timeout(120)

JSON = dict[str, Any]

GOLDEN: dict[str, JSON] = {
    case["name"]: case
    for case in json.loads(
        (
            Path(__file__).parents[2] / "unit" / "controllers" / "nodepool_hash_golden.json"
        ).read_text()
    )
}
NOW = "2026-01-01T00:00:00Z"


async def _controller(env: Env) -> NodePoolHashController:
    pools = await env.informer(NODEPOOLS)
    claims = await env.informer(NODECLAIMS)
    return NodePoolHashController(client=env.client, nodepools=pools, nodeclaims=claims)


def _hash_of(obj: JSON) -> tuple[str | None, str | None]:
    annotations = obj["metadata"].get("annotations") or {}
    return (
        annotations.get(ANNOTATION_NODEPOOL_HASH),
        annotations.get(ANNOTATION_NODEPOOL_HASH_VERSION),
    )


def _stamped(value: str, version: str = "v3") -> dict[str, str]:
    return {ANNOTATION_NODEPOOL_HASH: value, ANNOTATION_NODEPOOL_HASH_VERSION: version}


async def test_stored_nodepool_gets_karpenters_hash(env: Env) -> None:
    controller = await _controller(env)
    env.run(controller)
    # The apiserver defaults expireAfter to 720h: the stored template is the golden
    # "minimal-defaulted" one (requirements differ, and are not hashed).
    await env.create(NODEPOOLS, nodepool())
    expected = GOLDEN["minimal-defaulted"]["hash"]
    pool = await env.cached(controller.nodepools, "pool", lambda p: _hash_of(p)[0] is not None)
    assert _hash_of(pool) == (expected, "v3")


async def test_objects_stamped_by_karpenter_are_left_as_they_are(env: Env) -> None:
    controller = await _controller(env)
    case = GOLDEN["everything"]
    karpenter = _stamped(case["hash"])
    pool = copy.deepcopy(case["nodePool"])
    pool["metadata"] = {"name": "pool", "annotations": karpenter}
    created_pool = await env.create(NODEPOOLS, pool)
    created_claim = await env.create(NODECLAIMS, nodeclaim("claim", annotations=karpenter))
    await env.cached(controller.nodepools, "pool", lambda p: True)
    await env.cached(controller.nodeclaims, "claim", lambda c: True)

    await controller.reconcile("pool")

    stored_pool = await env.get(NODEPOOLS, "pool")
    stored_claim = await env.get(NODECLAIMS, "claim")
    assert nodepool_hash(stored_pool) == case["hash"]
    assert stored_pool["metadata"]["resourceVersion"] == created_pool["metadata"]["resourceVersion"]
    assert (
        stored_claim["metadata"]["resourceVersion"] == created_claim["metadata"]["resourceVersion"]
    )
    assert _hash_of(stored_claim) == (case["hash"], "v3")


async def test_hash_version_change_restamps_nodeclaims_as_karpenter_does(env: Env) -> None:
    controller = await _controller(env)
    # Stamped by karpy before it computed Karpenter's hash, and by an older Karpenter.
    pool = nodepool()
    pool["metadata"]["annotations"] = _stamped("1", "karpy-v1")
    await env.create(NODEPOOLS, pool)
    await env.create(NODECLAIMS, nodeclaim("old-karpy", annotations=_stamped("1", "karpy-v1")))
    await env.create(NODECLAIMS, nodeclaim("old-karpenter", annotations=_stamped("2", "v2")))
    await env.create(NODECLAIMS, nodeclaim("drifted", annotations=_stamped("3", "v2")))
    await env.patch_status(
        NODECLAIMS,
        "drifted",
        {
            "conditions": [
                {
                    "type": "Drifted",
                    "status": "True",
                    "reason": "NodePoolDrifted",
                    "message": "",
                    "lastTransitionTime": NOW,
                }
            ]
        },
    )
    await env.create(NODECLAIMS, nodeclaim("current", annotations=_stamped("4")))
    await env.create(
        NODECLAIMS, nodeclaim("other-pool", pool="other", annotations=_stamped("5", "v2"))
    )
    for name in ("old-karpy", "old-karpenter", "current", "other-pool"):
        await env.cached(controller.nodeclaims, name, lambda c: True)
    await env.cached(controller.nodeclaims, "drifted", lambda c: "status" in c)
    env.run(controller)

    expected = GOLDEN["minimal-defaulted"]["hash"]
    await env.cached(controller.nodepools, "pool", lambda p: _hash_of(p) == (expected, "v3"))
    # NodeClaims are re-stamped before the NodePool is.
    claims = {
        c: _hash_of(await env.get(NODECLAIMS, c))
        for c in ("old-karpy", "old-karpenter", "drifted", "current", "other-pool")
    }
    assert claims == {
        "old-karpy": (expected, "v3"),
        "old-karpenter": (expected, "v3"),
        # Whether it is still drifted cannot be known: it keeps its hash, and so its drift.
        "drifted": ("3", "v3"),
        # Already at the current version: compared as it is (Karpenter leaves it too).
        "current": ("4", "v3"),
        "other-pool": ("5", "v2"),
    }

    # A template change re-stamps the NodePool only: its NodeClaims are now drifted.
    await env.client.patch(
        NODEPOOLS, "pool", {"spec": {"template": {"metadata": {"labels": {"team": "b"}}}}}
    )
    changed = await env.cached(
        controller.nodepools, "pool", lambda p: _hash_of(p)[0] not in (None, expected)
    )
    assert _hash_of(changed) == (nodepool_hash(changed), "v3")
    assert _hash_of(await env.get(NODECLAIMS, "old-karpy")) == (expected, "v3")


async def test_a_failed_restamp_leaves_the_nodepool_unstamped_until_it_succeeds(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller = await _controller(env)
    pool = nodepool()
    pool["metadata"]["annotations"] = _stamped("1", "v2")
    await env.create(NODEPOOLS, pool)
    for name in ("a", "b"):
        await env.create(NODECLAIMS, nodeclaim(name, annotations=_stamped("1", "v2")))
        await env.cached(controller.nodeclaims, name, lambda c: True)
    await env.cached(controller.nodepools, "pool", lambda p: True)

    # Fault at the client seam: the first patch of NodeClaim "a" conflicts.
    patch = env.client.patch
    failed: list[str] = []

    async def conflicting_once(resource: Any, name: str, body: object, **kw: Any) -> JSON:
        if resource is NODECLAIMS and name == "a" and not failed:
            failed.append(name)
            raise ConflictError(status=409, reason="Conflict", message="injected")
        return await patch(resource, name, body, **kw)

    monkeypatch.setattr(env.client, "patch", conflicting_once)
    with pytest.raises(ConflictError):
        await controller.reconcile("pool")
    expected = GOLDEN["minimal-defaulted"]["hash"]
    assert _hash_of(await env.get(NODECLAIMS, "a")) == ("1", "v2")
    assert _hash_of(await env.get(NODECLAIMS, "b")) == (expected, "v3")
    assert _hash_of(await env.get(NODEPOOLS, "pool")) == ("1", "v2")

    # The retry (the controller requeues a raised reconcile) finishes the job.
    await env.cached(controller.nodeclaims, "b", lambda c: _hash_of(c)[1] == "v3")
    await controller.reconcile("pool")
    assert _hash_of(await env.get(NODECLAIMS, "a")) == (expected, "v3")
    assert _hash_of(await env.get(NODEPOOLS, "pool")) == (expected, "v3")
