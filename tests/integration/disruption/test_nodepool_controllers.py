"""NodePool controllers against a real apiserver: validation, NodeClass readiness, Ready,
registration health and the counter (the hash annotations: test_nodepool_hash.py)."""

from __future__ import annotations

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODEPOOLS
from karpy.controllers.nodepool.counter import NodePoolCounterController
from karpy.controllers.nodepool.readiness import NodePoolReadinessController
from karpy.controllers.nodepool.registrationhealth import NodePoolRegistrationHealthController
from karpy.controllers.nodepool.validation import NodePoolValidationController
from karpy.kube import FakeClock
from karpy.state.nodepoolhealth import NodePoolHealth
from tests.integration.disruption.support import Env
from tests.kit import conditions, kwok_nodeclass, nodepool, status_of

pytestmark = pytest.mark.timeout(120)


async def _controllers(
    env: Env,
) -> tuple[NodePoolValidationController, NodePoolReadinessController]:
    pools = await env.informer(NODEPOOLS)
    classes = await env.informer(KWOKNODECLASSES)
    validation = NodePoolValidationController(client=env.client, nodepools=pools)
    readiness = NodePoolReadinessController(
        client=env.client, nodepools=pools, nodeclasses={KWOKNODECLASSES: classes}
    )
    return validation, readiness


async def test_valid_pool_with_ready_nodeclass_becomes_ready(env: Env) -> None:
    validation, readiness = await _controllers(env)
    env.run(validation)
    env.run(readiness)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool())
    pool = await env.cached(validation.nodepools, "pool", lambda p: status_of(p, "Ready") == "True")
    found = conditions(pool)
    assert found["ValidationSucceeded"]["status"] == "True"
    assert found["NodeClassReady"]["status"] == "True"
    assert found["Ready"]["observedGeneration"] == pool["metadata"]["generation"]
    assert found["Ready"]["lastTransitionTime"]


async def test_missing_nodeclass_is_named_and_pool_turns_ready_when_it_appears(env: Env) -> None:
    validation, readiness = await _controllers(env)
    env.run(validation)
    env.run(readiness)
    await env.create(NODEPOOLS, nodepool(nodeclass="missing"))
    pool = await env.cached(
        validation.nodepools, "pool", lambda p: status_of(p, "NodeClassReady") == "False"
    )
    ready = conditions(pool)["NodeClassReady"]
    assert ready["reason"] == "NodeClassNotFound"
    assert "KWOKNodeClass/missing" in ready["message"]
    pool = await env.cached(
        validation.nodepools, "pool", lambda p: status_of(p, "Ready") == "False"
    )
    # As Karpenter reports it: the root names its unhealthy dependents.
    assert (conditions(pool)["Ready"]["reason"], conditions(pool)["Ready"]["message"]) == (
        "UnhealthyDependents",
        "NodeClassReady=False",
    )
    # The NodeClass appears: the watch on NodeClasses re-reconciles the NodePool.
    await env.create(KWOKNODECLASSES, kwok_nodeclass("missing"))
    await env.cached(validation.nodepools, "pool", lambda p: status_of(p, "Ready") == "True")


async def test_unsupported_nodeclass_kind_is_not_ready(env: Env) -> None:
    _, readiness = await _controllers(env)
    await env.create(
        NODEPOOLS,
        nodepool(group="karpenter.k8s.aws", kind="EC2NodeClass", nodeclass="default"),
    )
    await env.cached(readiness.nodepools, "pool", lambda p: True)
    await readiness.reconcile("pool")
    pool = await env.cached(
        readiness.nodepools, "pool", lambda p: status_of(p, "NodeClassReady") == "False"
    )
    message = conditions(pool)["NodeClassReady"]["message"]
    assert "EC2NodeClass.karpenter.k8s.aws" in message
    assert "KWOKNodeClass.karpenter.kwok.sh" in message


async def test_nodeclass_not_ready_or_terminating(env: Env) -> None:
    _, readiness = await _controllers(env)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool())
    await env.patch_status(
        KWOKNODECLASSES,
        "default",
        {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "SubnetsNotFound",
                    "message": "no subnets matched",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    )
    classes = readiness.check.nodeclasses[KWOKNODECLASSES]
    await env.cached(classes, "default", lambda c: status_of(c, "Ready") == "False")
    await env.cached(readiness.nodepools, "pool", lambda p: True)
    await readiness.reconcile("pool")
    pool = await env.cached(
        readiness.nodepools, "pool", lambda p: status_of(p, "NodeClassReady") == "False"
    )
    assert conditions(pool)["NodeClassReady"]["reason"] == "SubnetsNotFound"
    assert conditions(pool)["NodeClassReady"]["message"] == "no subnets matched"

    await env.client.patch(
        KWOKNODECLASSES, "default", {"metadata": {"finalizers": ["test.karpy.sh/hold"]}}
    )
    await env.client.delete(KWOKNODECLASSES, "default")
    await env.cached(classes, "default", lambda c: bool(c["metadata"].get("deletionTimestamp")))
    await readiness.reconcile("pool")
    pool = await env.cached(
        readiness.nodepools,
        "pool",
        lambda p: conditions(p)["NodeClassReady"]["reason"] == "NodeClassTerminating",
    )
    assert "KWOKNodeClass/default" in conditions(pool)["NodeClassReady"]["message"]
    await env.client.patch(KWOKNODECLASSES, "default", {"metadata": {"finalizers": None}})


async def test_runtime_invalid_pool_is_not_ready(env: Env) -> None:
    validation, readiness = await _controllers(env)
    env.run(validation)
    env.run(readiness)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    taint = {"key": "dedicated", "value": "a", "effect": "NoSchedule"}
    await env.create(NODEPOOLS, nodepool(taints=[taint], startup_taints=[taint]))
    pool = await env.cached(
        validation.nodepools, "pool", lambda p: status_of(p, "ValidationSucceeded") == "False"
    )
    failed = conditions(pool)["ValidationSucceeded"]
    assert failed["reason"] == "NodePoolValidationFailed"
    assert "duplicate taint dedicated:NoSchedule" in failed["message"]
    pool = await env.cached(
        validation.nodepools,
        "pool",
        lambda p: status_of(p, "Ready") == "False" and status_of(p, "NodeClassReady") == "True",
    )
    assert (conditions(pool)["Ready"]["reason"], conditions(pool)["Ready"]["message"]) == (
        "UnhealthyDependents",
        "ValidationSucceeded=False",
    )
    # Fixing the spec makes it Ready again.
    await env.client.patch(
        NODEPOOLS, "pool", {"spec": {"template": {"spec": {"startupTaints": None}}}}
    )
    await env.cached(validation.nodepools, "pool", lambda p: status_of(p, "Ready") == "True")


async def test_registration_health_follows_outcomes_and_resets_on_change(env: Env) -> None:
    pools = await env.informer(NODEPOOLS)
    classes = await env.informer(KWOKNODECLASSES)
    health = NodePoolHealth()
    controller = NodePoolRegistrationHealthController(
        client=env.client, nodepools=pools, nodeclasses={KWOKNODECLASSES: classes}, health=health
    )
    env.run(controller)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool())
    pool = await env.cached(
        pools, "pool", lambda p: status_of(p, "NodeRegistrationHealthy") == "Unknown"
    )
    assert pool["status"]["nodeClassObservedGeneration"] == 1

    health.record_success("pool")
    await env.cached(pools, "pool", lambda p: status_of(p, "NodeRegistrationHealthy") == "True")
    health.record_failure("pool")  # 1 of 2: still healthy
    health.record_failure("pool", reason="InsufficientCapacity", message="no capacity")
    pool = await env.cached(
        pools, "pool", lambda p: status_of(p, "NodeRegistrationHealthy") == "False"
    )
    unhealthy = conditions(pool)["NodeRegistrationHealthy"]
    assert unhealthy["reason"] == "InsufficientCapacity"
    assert unhealthy["message"] == "no capacity"
    # Registration health does not make the NodePool unready.
    assert status_of(pool, "Ready") != "False"

    # A spec change means the new configuration has not been tried: back to Unknown.
    await env.client.patch(NODEPOOLS, "pool", {"spec": {"weight": 10}})
    pool = await env.cached(
        pools, "pool", lambda p: status_of(p, "NodeRegistrationHealthy") == "Unknown"
    )
    assert conditions(pool)["NodeRegistrationHealthy"]["observedGeneration"] == 2
    health.record_success("pool")
    await env.cached(pools, "pool", lambda p: status_of(p, "NodeRegistrationHealthy") == "True")


async def test_counter_writes_resources_with_zeros_once_synced(env: Env) -> None:
    pools = await env.informer(NODEPOOLS)
    totals: dict[str, dict[str, int]] = {"pool": {"cpu": 4000, "memory": 8 * 2**30, "nodes": 2}}
    synced = False
    clock = FakeClock()
    counter = NodePoolCounterController(
        client=env.client,
        nodepools=pools,
        resources_for=lambda name: totals.get(name, {}),
        synced=lambda: synced,
        clock=clock,
    )
    await env.create(NODEPOOLS, nodepool())
    await env.cached(pools, "pool", lambda p: True)
    result = await counter.reconcile("pool")
    assert result is not None and result.requeue_after == 1.0
    assert "resources" not in ((await env.get(NODEPOOLS, "pool")).get("status") or {})

    synced = True
    result = await counter.reconcile("pool")
    assert result is not None and result.requeue_after == 5.0
    pool = await env.get(NODEPOOLS, "pool")
    assert pool["status"]["resources"] == {
        "cpu": "4",
        "memory": "8Gi",
        "pods": "0",
        "ephemeral-storage": "0",
        "nodes": "2",
    }
    assert pool["status"]["nodes"] == 2

    totals["pool"] = {"cpu": 2000, "memory": 4 * 2**30, "nodes": 1, "nvidia.com/gpu": 1}
    await env.cached(pools, "pool", lambda p: (p.get("status") or {}).get("nodes") == 2)
    await counter.reconcile("pool")
    pool = await env.get(NODEPOOLS, "pool")
    assert pool["status"]["resources"]["nvidia.com/gpu"] == "1"
    assert pool["status"]["nodes"] == 1
