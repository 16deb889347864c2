"""The Node and NodeClaim finalizers against a real apiserver: deleting a NodeClaim drains its
node through the Eviction API in Karpenter's tier order, respects PodDisruptionBudgets and
`do-not-disrupt`, force-deletes at the terminationGracePeriod, waits for VolumeAttachments, and
ends with the instance terminated and no finalizer left."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from karpy.controllers.common.objects import NODECLAIMS
from karpy.controllers.node.termination import metrics as node_metrics
from karpy.controllers.nodeclaim.termination import metrics as claim_metrics
from karpy.kube import NODES, PODS, HandlerFuncs
from karpy.kube.resources import DAEMONSETS, PODDISRUPTIONBUDGETS, VOLUMEATTACHMENTS, Resource
from tests.integration.termination.support import POOL, Env, condition, volume_attachment
from tests.kit import pod

DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments", namespaced=True)

pytestmark = pytest.mark.timeout(180)
JSON = dict[str, Any]


def _sample(metric: Any, **labels: str) -> float:
    return float(metric.labels(**labels)._value.get())


async def test_deleting_a_nodeclaim_drains_terminates_and_removes_finalizers(env: Env) -> None:
    await env.start_kubelet()
    env.cloud.terminating_calls = 1  # the instance answers "still terminating" once
    await env.managed_node("n1")
    for index in range(3):
        await env.client.create(PODS, pod(f"web-{index}", env.namespace, node="n1"))
    terminated_before = _sample(node_metrics.NODES_TERMINATED, nodepool=POOL, zone="test-zone-a")
    claims_before = _sample(
        claim_metrics.NODECLAIMS_TERMINATED, nodepool=POOL, capacity_type="", zone=""
    )
    await env.start_termination()

    await env.client.delete(NODECLAIMS, "n1")

    async def both_gone() -> bool:
        return await env.gone(NODES, "n1") and await env.gone(NODECLAIMS, "n1")

    await env.until(both_gone, timeout=60, message="node and nodeclaim to be finalized")
    assert "test://n1" not in env.cloud.instances
    assert env.cloud.deletes("test://n1") >= 2
    remaining = await env.client.list(PODS, namespace=env.namespace)
    assert remaining.items == []
    assert _sample(node_metrics.NODES_TERMINATED, nodepool=POOL, zone="test-zone-a") == (
        terminated_before + 1
    )
    assert _sample(
        claim_metrics.NODECLAIMS_TERMINATED, nodepool=POOL, capacity_type="", zone=""
    ) == (claims_before + 1)
    evicted = await env.events_for("web-0", "Evicted", namespace=env.namespace)
    assert evicted and evicted[0]["message"] == "Evicted pod: Forceful Termination"


async def test_node_is_tainted_labelled_and_conditions_set_while_draining(env: Env) -> None:
    await env.start_kubelet()
    await env.managed_node("n1")
    await env.client.create(
        PODS,
        pod(
            "stay",
            env.namespace,
            node="n1",
            annotations={"karpenter.sh/do-not-disrupt": "true"},
        ),
    )
    await env.start_termination()
    await env.client.delete(NODES, "n1")

    async def tainted() -> JSON | None:
        node = await env.client.get(NODES, "n1")
        taints = node["spec"].get("taints") or []
        return node if any(t["key"] == "karpenter.sh/disrupted" for t in taints) else None

    node = await env.until(tainted, message="disrupted taint")
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert (
        node["metadata"]["labels"]["node.kubernetes.io/exclude-from-external-load-balancers"]
        == "karpenter"
    )

    async def draining() -> JSON | None:
        claim = await env.client.get(NODECLAIMS, "n1")
        found = condition(claim, "Drained")
        return claim if found and found["reason"] == "Draining" else None

    claim = await env.until(draining, message="Drained=Unknown/Draining")
    assert claim["metadata"]["deletionTimestamp"]  # the node's finalizer deleted its NodeClaim
    assert condition(claim, "Drained")["status"] == "Unknown"  # type: ignore[index]
    failed = await env.until(lambda: env.events_for(node, "FailedDraining"), message="event")
    assert "1 pods are waiting to be evicted" in failed[0]["message"]


async def test_drain_evicts_in_tier_order(env: Env) -> None:
    kubelet = await env.start_kubelet()
    daemonset = await env.client.create(
        DAEMONSETS,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": env.namespace},
            "spec": {
                "selector": {"matchLabels": {"app": "agent-template"}},
                "template": {
                    "metadata": {"labels": {"app": "agent-template"}},
                    "spec": {
                        "nodeSelector": {"no-such-node": "true"},
                        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                    },
                },
            },
        },
    )
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "agent",
        "uid": daemonset["metadata"]["uid"],
        "controller": False,
    }
    await env.managed_node("n1")
    tiers = {
        "app-a": 0,
        "app-b": 0,
        "agent-a": 1,
        "critical": 2,
        "critical-agent": 3,
    }
    await env.client.create(PODS, pod("app-a", env.namespace, node="n1"))
    await env.client.create(PODS, pod("app-b", env.namespace, node="n1"))
    await env.client.create(PODS, pod("agent-a", env.namespace, node="n1", owner=owner))
    await env.client.create(
        PODS, pod("critical", env.namespace, node="n1", priority_class="system-cluster-critical")
    )
    await env.client.create(
        PODS,
        pod(
            "critical-agent",
            env.namespace,
            node="n1",
            owner=owner,
            priority_class="system-node-critical",
        ),
    )
    # A pod tolerating the disrupted taint is never drained; the node goes anyway.
    await env.client.create(
        PODS,
        pod(
            "tolerant",
            env.namespace,
            node="n1",
            tolerations=[{"key": "karpenter.sh/disrupted", "operator": "Exists"}],
        ),
    )
    order: list[str] = []

    def record(_old: JSON, new: JSON) -> None:
        name = new["metadata"]["name"]
        if new["metadata"].get("deletionTimestamp") and name not in order:
            order.append(name)

    pods = await env.informer(PODS)
    pods.add_handler(HandlerFuncs(update=record))
    kubelet.finish_after = 0.3
    await env.start_termination()
    await env.client.delete(NODES, "n1")
    await env.until(lambda: env.gone(NODES, "n1"), timeout=60, message="node finalized")

    assert sorted(order) == sorted(tiers)
    seen = [tiers[name] for name in order]
    assert seen == sorted(seen), f"evicted out of tier order: {order}"
    tolerant = await env.client.get(PODS, "tolerant", namespace=env.namespace)
    assert not tolerant["metadata"].get("deletionTimestamp")


async def test_pdb_with_max_unavailable_one_evicts_one_pod_at_a_time(env: Env) -> None:
    await env.start_kubelet()
    node, _ = await env.managed_node("n1")
    await env.client.create(
        PODDISRUPTIONBUDGETS,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": env.namespace},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    await env.client.create(DEPLOYMENTS, deployment("web", env.namespace, replicas=3))

    async def budget_allows_one() -> bool:
        pdb = await env.client.get(PODDISRUPTIONBUDGETS, "web", namespace=env.namespace)
        status = pdb.get("status") or {}
        return status.get("currentHealthy") == 3 and status.get("disruptionsAllowed") == 1

    await env.until(budget_allows_one, timeout=60, message="the PDB to count 3 healthy pods")
    pods = await env.informer(PODS)
    lowest_healthy: list[int] = []

    def healthy() -> int:
        return sum(
            1
            for p in pods.list()
            if p["metadata"].get("namespace") == env.namespace
            and not p["metadata"].get("deletionTimestamp")
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (p.get("status") or {}).get("conditions") or ()
            )
        )

    def watch(_old: JSON, new: JSON) -> None:
        if new["metadata"].get("namespace") == env.namespace and new["metadata"].get(
            "deletionTimestamp"
        ):
            lowest_healthy.append(healthy())

    pods.add_handler(HandlerFuncs(update=watch))
    await env.start_termination()
    await env.client.delete(NODES, "n1")

    # One eviction goes through; the replacement cannot schedule (the node is tainted), so the
    # budget allows no more: the other two are refused with 429 and retried.
    async def pdb_refused() -> bool:
        events = await env.events_for(node, "FailedDraining")
        return any("violates a PDB" in e["message"] for e in events)

    await env.until(pdb_refused, timeout=30, message="a FailedDraining event for the PDB")
    await asyncio.sleep(3)
    on_node = [p for p in pods.list() if (p.get("spec") or {}).get("nodeName") == "n1"]
    assert len(on_node) == 2, "a second pod went while the budget allowed none"
    assert not await env.gone(NODES, "n1")

    # New capacity: each Ready replacement lets the next eviction through.
    await env.plain_node("spare")
    await env.until(lambda: env.gone(NODES, "n1"), timeout=90, message="node finalized")
    assert lowest_healthy and min(lowest_healthy) >= 2, lowest_healthy
    moved = [p for p in pods.list() if p["metadata"].get("namespace") == env.namespace]
    assert {(p.get("spec") or {}).get("nodeName") for p in moved} == {"spare"}


def deployment(name: str, namespace: str, *, replicas: int) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ],
                },
            },
        },
    }


async def test_do_not_disrupt_pod_is_waited_for_never_evicted(env: Env) -> None:
    await env.start_kubelet()
    await env.managed_node("n1")
    await env.client.create(
        PODS,
        pod("keep", env.namespace, node="n1", annotations={"karpenter.sh/do-not-disrupt": "true"}),
    )
    await env.client.create(PODS, pod("go", env.namespace, node="n1"))
    await env.start_termination()
    await env.client.delete(NODES, "n1")
    await env.until(
        lambda: env.gone(PODS, "go", env.namespace), message="the ordinary pod to be evicted"
    )
    await asyncio.sleep(4)
    kept = await env.client.get(PODS, "keep", namespace=env.namespace)
    assert not kept["metadata"].get("deletionTimestamp")
    assert not await env.gone(NODES, "n1")
    claim = await env.client.get(NODECLAIMS, "n1")
    assert condition(claim, "Drained")["status"] == "Unknown"  # type: ignore[index]
    assert env.cloud.deletes("test://n1") == 0

    # Once the pod finishes on its own, termination completes.
    await env.client.delete(PODS, "keep", namespace=env.namespace, grace_period_seconds=0)
    await env.until(lambda: env.gone(NODES, "n1"), timeout=60, message="node finalized")
    await env.until(lambda: env.gone(NODECLAIMS, "n1"), message="nodeclaim finalized")


async def test_termination_grace_period_force_deletes_blocking_pods(env: Env) -> None:
    await env.start_kubelet()
    node, _ = await env.managed_node("n1", grace_period="8s")
    await env.client.create(
        PODS,
        pod(
            "keep",
            env.namespace,
            node="n1",
            annotations={"karpenter.sh/do-not-disrupt": "true"},
            grace=3,
        ),
    )
    await env.start_termination()
    await env.client.delete(NODECLAIMS, "n1")

    async def stamped() -> str | None:
        claim = await env.client.get(NODECLAIMS, "n1")
        annotations = claim["metadata"].get("annotations") or {}
        return annotations.get("karpenter.sh/nodeclaim-termination-timestamp")

    await env.until(stamped, message="termination timestamp annotation")
    warned = await env.until(
        lambda: env.events_for(node, "TerminationGracePeriodExpiring"), message="warning"
    )
    assert warned[0]["message"].startswith("All pods will be deleted by ")
    disrupted = await env.until(
        lambda: env.events_for("keep", "Disrupted", namespace=env.namespace),
        timeout=30,
        message="the blocking pod to be force-deleted",
    )
    assert (
        "bypasses the PDB of the pod and the do-not-disrupt annotation" in disrupted[0]["message"]
    )
    await env.until(lambda: env.gone(NODES, "n1"), timeout=60, message="node finalized")
    await env.until(lambda: env.gone(NODECLAIMS, "n1"), message="nodeclaim finalized")


async def test_volume_attachments_are_waited_for(env: Env) -> None:
    await env.start_kubelet()
    node, _ = await env.managed_node("n1")
    await env.client.create(VOLUMEATTACHMENTS, volume_attachment("va-n1", node="n1", pv="pv-data"))
    await env.start_termination()
    await env.client.delete(NODES, "n1")

    async def awaiting() -> JSON | None:
        claim = await env.client.get(NODECLAIMS, "n1")
        found = condition(claim, "VolumesDetached")
        return claim if found and found["reason"] == "AwaitingVolumeDetachment" else None

    claim = await env.until(awaiting, timeout=30, message="VolumesDetached=Unknown")
    assert condition(claim, "Drained")["status"] == "True"  # type: ignore[index]
    events = await env.until(
        lambda: env.events_for(node, "AwaitingVolumeDetachment"), message="event"
    )
    assert events[0]["message"] == "Awaiting deletion of bound volumeattachments (va-n1)"
    await asyncio.sleep(2)
    assert not await env.gone(NODES, "n1")
    assert env.cloud.deletes("test://n1") == 0

    await env.client.delete(VOLUMEATTACHMENTS, "va-n1")
    await env.until(lambda: env.gone(NODES, "n1"), timeout=30, message="node finalized")


async def test_volume_attachments_stop_blocking_once_the_grace_period_ran_out(env: Env) -> None:
    await env.start_kubelet()
    await env.managed_node("n1", grace_period="4s")
    await env.client.create(
        VOLUMEATTACHMENTS, volume_attachment("va-stuck", node="n1", pv="pv-stuck")
    )
    await env.start_termination()
    await env.client.delete(NODECLAIMS, "n1")
    await env.until(lambda: env.gone(NODES, "n1"), timeout=40, message="node finalized")
    await env.until(lambda: env.gone(NODECLAIMS, "n1"), message="nodeclaim finalized")
    await env.client.delete(VOLUMEATTACHMENTS, "va-stuck")


async def test_node_whose_instance_is_gone_and_not_ready_skips_the_drain(env: Env) -> None:
    await env.start_kubelet()
    await env.managed_node("n1", register_instance=False)
    await env.client.patch_status(
        NODES, "n1", {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    )
    await env.client.create(
        PODS,
        pod("keep", env.namespace, node="n1", annotations={"karpenter.sh/do-not-disrupt": "true"}),
    )
    await env.start_termination()
    await env.client.delete(NODES, "n1")
    await env.until(lambda: env.gone(NODES, "n1"), timeout=30, message="node finalized")
    await env.until(lambda: env.gone(NODECLAIMS, "n1"), message="nodeclaim finalized")
