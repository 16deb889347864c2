"""The disruption loop in-process against a real apiserver: empty, consolidatable nodes are
tainted, marked and deleted within their NodePool's budget; do-not-disrupt, blocking budgets,
pods arriving during validation and consolidation disabled keep nodes; stale marks are removed;
a delete a killed leader left persisted is re-validated by the next one before it deletes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.apis.objects import format_time, is_node_ready
from karpy.controllers.disruption import DisruptionController
from karpy.controllers.disruption.orchestration.marks import (
    ANNOTATION_COMMAND,
    ANNOTATION_REPLACEMENTS,
    ANNOTATION_STARTED,
)
from karpy.kube import NODES, PODS, EventRecorder
from karpy.kube.resources import EVENTS
from karpy.state import Cluster
from tests.integration.disruption.support import HOLD, Env, managed_node
from tests.kit import conditions, kwok_nodeclass, nodepool, pod

pytestmark = pytest.mark.timeout(180)


async def _setup(
    env: Env, *, budgets: list[dict[str, Any]] | None = None, consolidate_after: str = "0s"
) -> tuple[DisruptionController, Cluster, EventRecorder]:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool(budgets=budgets, consolidate_after=consolidate_after))
    cluster = Cluster(env.cache)
    recorder = EventRecorder(env.client)
    controller = DisruptionController(
        client=env.client, cluster=cluster, events=recorder, validation_delay=0.3
    )
    return controller, cluster, recorder


async def _wait_synced(env: Env, cluster: Cluster, count: int) -> None:
    await env.until(
        lambda: (
            cluster.synced()
            and len([n for n in cluster.nodes() if n.initialized and is_node_ready(n.node)])
            == count
        ),
        message=f"cluster state with {count} initialized, Ready nodes",
    )


def _deleting(env: Env, cluster: Cluster) -> set[str]:
    return {
        str(c["metadata"]["name"])
        for c in cluster.nodeclaim_informer.list()
        if c["metadata"].get("deletionTimestamp")
    }


async def _release(env: Env, name: str) -> None:
    await env.client.patch(NODECLAIMS, name, {"metadata": {"finalizers": None}})
    await env.client.delete(NODES, name)


async def _events(env: Env, reason: str) -> list[dict[str, Any]]:
    """This test's events: objects of earlier tests on the same control plane had the same
    names ("pool") but other uids, and their events outlive them."""
    uids = set()
    for resource in (NODEPOOLS, NODECLAIMS, NODES):
        uids |= {o["metadata"]["uid"] for o in (await env.client.list(resource)).items}
    listed = await env.client.list(EVENTS, field_selector=f"reason={reason}")
    return [e for e in listed.items if e["involvedObject"].get("uid") in uids]


async def test_empty_nodes_go_one_at_a_time_under_a_one_node_budget(env: Env) -> None:
    controller, cluster, recorder = await _setup(env, budgets=[{"nodes": "1"}])
    for name in ("empty-a", "empty-b", "empty-c"):
        await managed_node(env, name, hold=True)
    await _wait_synced(env, cluster, 3)

    result = await controller.reconcile("disruption")
    assert result.requeue_after == 0.0
    first = await env.until(lambda: _deleting(env, cluster), message="one deletion")
    assert len(first) == 1
    victim = next(iter(first))
    node = await env.get(NODES, victim)
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in node["spec"]["taints"]
    claim = await env.get(NODECLAIMS, victim)
    reason = conditions(claim)["DisruptionReason"]
    assert (reason["status"], reason["reason"]) == ("True", "Empty")

    # The deleting node uses the whole budget: nothing else goes.
    result = await controller.reconcile("disruption")
    assert result.requeue_after == controller.polling_period
    assert _deleting(env, cluster) == first

    await _release(env, victim)
    await _wait_synced(env, cluster, 2)
    await controller.reconcile("disruption")
    second = await env.until(lambda: _deleting(env, cluster), message="second deletion")
    assert len(second) == 1 and second != first

    await recorder.flush()
    terminating = await _events(env, "DisruptionTerminating")
    messages = {e["message"] for e in terminating}
    assert {"Disrupting Node: Empty", "Disrupting NodeClaim: Empty"} <= messages


async def test_percentage_budget_rounds_up_and_takes_several_at_once(env: Env) -> None:
    controller, cluster, _ = await _setup(env, budgets=[{"nodes": "50%"}])
    for name in ("pct-a", "pct-b", "pct-c"):
        await managed_node(env, name, hold=True)
    await _wait_synced(env, cluster, 3)
    await controller.reconcile("disruption")
    deleting = await env.until(
        lambda: len(_deleting(env, cluster)) == 2 and _deleting(env, cluster),
        message="two deletions (50% of 3, rounded up)",
    )
    assert len(deleting) == 2


async def test_do_not_disrupt_node_and_non_consolidatable_node_stay(env: Env) -> None:
    controller, cluster, _ = await _setup(env, budgets=[{"nodes": "100%"}])
    await managed_node(env, "keep-me", node_annotations={"karpenter.sh/do-not-disrupt": "true"})
    await managed_node(env, "too-recent", consolidatable=False)
    await managed_node(env, "goes", hold=True)
    await _wait_synced(env, cluster, 3)
    await controller.reconcile("disruption")
    assert await env.until(lambda: _deleting(env, cluster)) == {"goes"}
    await controller.reconcile("disruption")
    assert _deleting(env, cluster) == {"goes"}
    assert {c["metadata"]["name"] for c in cluster.nodeclaim_informer.list()} == {
        "keep-me",
        "too-recent",
        "goes",
    }


async def test_blocking_budget_deletes_nothing_and_says_so(env: Env) -> None:
    controller, cluster, recorder = await _setup(
        env, budgets=[{"nodes": "0", "reasons": ["Empty"]}, {"nodes": "100%"}]
    )
    await managed_node(env, "blocked")
    await _wait_synced(env, cluster, 1)
    result = await controller.reconcile("disruption")
    assert result.requeue_after == controller.polling_period
    assert not _deleting(env, cluster)
    await recorder.flush()
    blocked = [
        e
        for e in await _events(env, "DisruptionBlocked")
        if e["involvedObject"]["kind"] == "NodePool"
    ]
    assert [e["message"] for e in blocked] == [
        "No allowed disruptions for disruption reason Empty due to blocking budget"
    ]


async def test_pod_arriving_during_validation_cancels_the_deletion(
    env: Env, namespace: str
) -> None:
    controller, cluster, _ = await _setup(env, budgets=[{"nodes": "100%"}])
    controller.validation_delay = 3.0
    await managed_node(env, "busy-soon")
    await _wait_synced(env, cluster, 1)
    task = asyncio.create_task(controller.reconcile("disruption"))
    await asyncio.sleep(0.5)
    await env.client.create(PODS, pod("late", namespace, node="busy-soon"), namespace=namespace)
    await env.until(lambda: bool(cluster.node("kwok://busy-soon").pods))  # type: ignore[union-attr]
    result = await task
    assert result.requeue_after == controller.polling_period
    assert not _deleting(env, cluster)
    node = await env.get(NODES, "busy-soon")
    assert not node["spec"].get("taints")


async def test_consolidation_disabled_keeps_empty_nodes(env: Env) -> None:
    controller, cluster, recorder = await _setup(
        env, budgets=[{"nodes": "100%"}], consolidate_after="Never"
    )
    await managed_node(env, "never")
    await _wait_synced(env, cluster, 1)
    await controller.reconcile("disruption")
    assert not _deleting(env, cluster)
    await recorder.flush()
    messages = {e["message"] for e in await _events(env, "Unconsolidatable")}
    assert messages == {'NodePool "pool" has consolidation disabled'}


@pytest.mark.parametrize("age", ["old", "recent"])
async def test_stale_disruption_marks_are_removed(env: Env, age: str) -> None:
    """A mark nothing acts on is removed; a recent one is left (its writer deletes the NodeClaim
    next, and the cache may show the mark before the deletion)."""
    controller, cluster, _ = await _setup(env, budgets=[{"nodes": "0"}])
    await managed_node(env, "stale", consolidatable=False)
    await env.client.patch(
        NODES,
        "stale",
        {
            "spec": {
                "taints": [
                    {"key": HOLD.split("/")[0] + "/x", "effect": "NoSchedule"},
                    {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
                ]
            }
        },
    )
    claim = await env.get(NODECLAIMS, "stale")
    marked = [
        *claim["status"]["conditions"],
        {
            "type": "DisruptionReason",
            "status": "True",
            "reason": "Empty",
            "message": "Empty",
            "lastTransitionTime": "2026-01-01T00:00:00Z"
            if age == "old"
            else format_time(datetime.now(UTC)),
        },
    ]
    await env.patch_status(NODECLAIMS, "stale", {"conditions": marked})
    await _wait_synced(env, cluster, 1)
    await env.until(
        lambda: (
            "DisruptionReason" in conditions(cluster.nodeclaim_informer.get("stale") or {})
            and len((cluster.node_informer.get("stale") or {})["spec"].get("taints") or ()) == 2
        )
    )
    await controller.reconcile("disruption")
    node = await env.get(NODES, "stale")
    claim_conditions = conditions(await env.get(NODECLAIMS, "stale"))
    if age == "recent":
        assert len(node["spec"]["taints"]) == 2 and "DisruptionReason" in claim_conditions
        return
    assert [t["key"] for t in node["spec"]["taints"]] == ["test.karpy.sh/x"]
    assert "DisruptionReason" not in claim_conditions


async def _persist_delete_command(env: Env, name: str, command_id: str) -> None:
    """What a leader killed after marking an emptiness delete leaves on `name`: the command
    annotations (no replacement), the disrupted taint and `DisruptionReason: Empty`."""
    await env.client.patch(
        NODECLAIMS,
        name,
        {
            "metadata": {
                "annotations": {
                    ANNOTATION_COMMAND: command_id,
                    ANNOTATION_REPLACEMENTS: "0",
                    ANNOTATION_STARTED: "2026-01-01T00:00:00Z",
                }
            }
        },
    )
    await env.client.patch(
        NODES,
        name,
        {"spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}},
    )
    claim = await env.get(NODECLAIMS, name)
    reason = {
        "type": "DisruptionReason",
        "status": "True",
        "reason": "Empty",
        "message": "Empty",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    await env.patch_status(
        NODECLAIMS, name, {"conditions": [*claim["status"]["conditions"], reason]}
    )


async def test_a_new_leader_revalidates_a_persisted_delete_before_deleting(
    env: Env, namespace: str
) -> None:
    controller, cluster, _ = await _setup(env, budgets=[{"nodes": "100%"}])
    await managed_node(env, "still-empty", hold=True)
    await managed_node(env, "now-busy", hold=True)
    await _persist_delete_command(env, "still-empty", "cmd-empty")
    await _persist_delete_command(env, "now-busy", "cmd-busy")
    # Since the crash, a pod landed on one of the nodes: it is no longer empty.
    await env.client.create(PODS, pod("arrived", namespace, node="now-busy"), namespace=namespace)
    await _wait_synced(env, cluster, 2)
    await env.until(
        lambda: (
            bool(cluster.node("kwok://now-busy").pods)  # type: ignore[union-attr]
            and all(
                controller.queue.owns(claim := cluster.nodeclaim_informer.get(n))
                and "DisruptionReason" in conditions(claim or {})
                for n in ("still-empty", "now-busy")
            )
        ),
        message="the persisted commands and the pod in cluster state",
    )
    assert controller.queue.revalidate is not None
    await controller.queue.step()
    still_empty = await env.get(NODECLAIMS, "still-empty")
    assert still_empty["metadata"].get("deletionTimestamp"), "the valid command was not finished"
    busy = await env.get(NODECLAIMS, "now-busy")
    assert not busy["metadata"].get("deletionTimestamp"), "deleted a node that holds a pod"
    assert ANNOTATION_COMMAND not in (busy["metadata"].get("annotations") or {})
    assert not (await env.get(NODES, "now-busy"))["spec"].get("taints")
