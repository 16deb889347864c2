"""The orchestration queue in-process against a real apiserver: a replace command marks and
persists itself, launches its replacement, and deletes the candidate only once the replacement
is Initialized; a timed-out command untaints and unmarks its candidate and keeps its replacement;
a fresh queue (a new leader) resumes a
persisted command whose replacement exists and rolls back one whose launch was cut short; a
delete command deletes and counts its candidate once while queue steps run beside its start."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.apis.v1 import validate_nodepool
from karpy.controllers.common.metrics import NODECLAIMS_DISRUPTED_TOTAL
from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.events import DedupingEvents
from karpy.controllers.disruption.methods import Command
from karpy.controllers.disruption.orchestration import OrchestrationQueue
from karpy.controllers.disruption.orchestration.marks import (
    ANNOTATION_COMMAND,
    ANNOTATION_REPLACEMENT_FOR,
    ANNOTATION_REPLACEMENTS,
    ANNOTATION_STARTED,
)
from karpy.kube import NODES, EventRecorder, RealClock
from karpy.scheduling.engine.model import NewNodeClaim
from karpy.scheduling.requirements import Requirements
from karpy.state import Cluster
from tests.integration.disruption.support import Env, managed_node
from tests.kit import conditions, kwok_nodeclass, nodepool, ready_claim_conditions
from tests.kit.wrapped import ClientWrapper

pytestmark = pytest.mark.timeout(180)


async def _setup(
    env: Env, *, command_timeout: float = 600.0, client: Any = None
) -> tuple[OrchestrationQueue, Cluster]:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool())
    await managed_node(env, "old", hold=True)
    cluster = Cluster(env.cache)
    await env.until(
        lambda: (
            cluster.synced()
            and cluster.nodepool_informer.get("pool") is not None
            and cluster.nodes()
        ),
        message="cluster state",
    )
    queue = OrchestrationQueue(
        client=client or env.client,
        cluster=cluster,
        events=DedupingEvents(EventRecorder(env.client), clock=RealClock()),
        timeout=command_timeout,
        max_timeout=max(command_timeout, 3600.0) if command_timeout else 0.0,
    )
    return queue, cluster


def _command(cluster: Cluster) -> Command:
    node = cluster.node_for_nodeclaim("old")
    assert node is not None
    pool = validate_nodepool(cluster.nodepool_informer.get("pool") or {})
    replacement = NewNodeClaim(
        nodepool="pool",
        requirements=Requirements(),
        instance_types=[],
        requests={},
        pods=[],
        offering=None,
        labels={},
    )
    return Command(
        candidates=(Candidate(node=node, nodepool=pool),),
        replacements=(replacement,),
        reason="Drifted",
    )


class SlowDeletes(ClientWrapper):
    """The API client with every delete held a moment: a queue step runs while the delete
    that `start` issued is still in flight."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.deletes: list[str] = []

    async def delete(self, resource: Any, name: str, **kwargs: Any) -> Any:
        self.deletes.append(name)
        await asyncio.sleep(0.3)
        return await self.inner.delete(resource, name, **kwargs)


def _emptied(nodepool: str) -> float:
    """karpenter_nodeclaims_disrupted_total{reason="empty"} for `nodepool`, any capacity type."""
    return sum(
        sample.value
        for metric in NODECLAIMS_DISRUPTED_TOTAL.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
        and sample.labels.get("reason") == "empty"
        and sample.labels.get("nodepool") == nodepool
    )


def _tainted(node: dict[str, object]) -> bool:
    spec = node.get("spec") or {}
    assert isinstance(spec, dict)
    return any(t.get("key") == "karpenter.sh/disrupted" for t in spec.get("taints") or ())


async def _replacements(env: Env, command_id: str) -> list[str]:
    listed = await env.client.list(NODECLAIMS)
    return [
        c["metadata"]["name"]
        for c in listed.items
        if (c["metadata"].get("annotations") or {}).get(ANNOTATION_REPLACEMENT_FOR) == command_id
        and not c["metadata"].get("deletionTimestamp")
    ]


async def test_replace_waits_for_the_replacement_to_initialize(env: Env) -> None:
    queue, cluster = await _setup(env)
    assert await queue.start(_command(cluster))
    old = await env.get(NODECLAIMS, "old")
    notes = old["metadata"]["annotations"]
    assert notes[ANNOTATION_REPLACEMENTS] == "1" and ANNOTATION_STARTED in notes
    assert conditions(old)["DisruptionReason"]["reason"] == "Drifted"
    assert _tainted(await env.get(NODES, "old"))
    (replacement,) = await _replacements(env, notes[ANNOTATION_COMMAND])

    await queue.step()  # not initialized: nothing deleted
    assert not (await env.get(NODECLAIMS, "old"))["metadata"].get("deletionTimestamp")
    assert len(queue) == 1

    await env.patch_status(
        NODECLAIMS, replacement, {"conditions": ready_claim_conditions("2026-01-01T00:00:00Z")}
    )
    await env.until(
        lambda: "Initialized" in conditions(cluster.nodeclaim_informer.get(replacement) or {}),
        message="replacement initialized in cache",
    )
    await queue.step()
    assert (await env.get(NODECLAIMS, "old"))["metadata"].get("deletionTimestamp")
    assert len(queue) == 0


async def test_timeout_untaints_the_candidate_and_keeps_the_replacement(env: Env) -> None:
    queue, cluster = await _setup(env, command_timeout=0.0)
    assert await queue.start(_command(cluster))
    command_id = (await env.get(NODECLAIMS, "old"))["metadata"]["annotations"][ANNOTATION_COMMAND]
    (replacement,) = await _replacements(env, command_id)
    await queue.step()
    # kept, as Karpenter keeps it: the registration/initialization timeouts or consolidation
    # deal with it
    assert await _replacements(env, command_id) == [replacement]
    old = await env.get(NODECLAIMS, "old")
    assert not old["metadata"].get("deletionTimestamp")
    assert ANNOTATION_COMMAND not in (old["metadata"].get("annotations") or {})
    assert "DisruptionReason" not in conditions(old)
    assert not _tainted(await env.get(NODES, "old"))
    assert len(queue) == 0


async def test_a_new_leader_resumes_a_command_whose_replacements_exist(env: Env) -> None:
    first, cluster = await _setup(env)
    assert await first.start(_command(cluster))
    command_id = (await env.get(NODECLAIMS, "old"))["metadata"]["annotations"][ANNOTATION_COMMAND]
    (replacement,) = await _replacements(env, command_id)
    await env.patch_status(
        NODECLAIMS, replacement, {"conditions": ready_claim_conditions("2026-01-01T00:00:00Z")}
    )
    fresh = Cluster(env.cache)
    await env.until(
        lambda: (
            fresh.nodeclaim_informer.has_synced()
            and "Initialized" in conditions(fresh.nodeclaim_informer.get(replacement) or {})
        ),
        message="fresh state",
    )
    second = OrchestrationQueue(
        client=env.client,
        cluster=fresh,
        events=DedupingEvents(EventRecorder(env.client), clock=RealClock()),
    )
    await second.step()
    assert (await env.get(NODECLAIMS, "old"))["metadata"].get("deletionTimestamp")
    assert await _replacements(env, command_id) == [replacement]  # none launched again


async def test_a_new_leader_rolls_back_a_command_cut_short_before_launching(env: Env) -> None:
    queue, cluster = await _setup(env)
    # What a crash right after marking leaves: annotations, condition and taint, no replacement.
    await env.client.patch(
        NODECLAIMS,
        "old",
        {
            "metadata": {
                "annotations": {
                    ANNOTATION_COMMAND: "cut-short",
                    ANNOTATION_REPLACEMENTS: "1",
                    ANNOTATION_STARTED: "2026-01-01T00:00:00Z",
                }
            }
        },
    )
    await env.client.patch(
        NODES,
        "old",
        {"spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}},
    )
    await env.until(
        lambda: (
            ANNOTATION_COMMAND
            in ((cluster.nodeclaim_informer.get("old") or {})["metadata"].get("annotations") or {})
        ),
        message="annotations in cache",
    )
    assert queue.owns(cluster.nodeclaim_informer.get("old"))
    await queue.step()
    old = await env.get(NODECLAIMS, "old")
    assert ANNOTATION_COMMAND not in (old["metadata"].get("annotations") or {})
    assert not old["metadata"].get("deletionTimestamp")
    assert not _tainted(await env.get(NODES, "old"))
    listed = await env.client.list(NODECLAIMS)
    assert [c["metadata"]["name"] for c in listed.items] == ["old"]


async def test_a_delete_command_deletes_and_counts_its_candidate_once(env: Env) -> None:
    client = SlowDeletes(env.client)
    queue, cluster = await _setup(env, client=client)
    node = cluster.node_for_nodeclaim("old")
    assert node is not None
    pool = validate_nodepool(cluster.nodepool_informer.get("pool") or {})
    command = Command(candidates=(Candidate(node=node, nodepool=pool),), reason="Empty")
    before = _emptied("pool")

    async def steps() -> None:
        for _ in range(10):
            await queue.step()
            await asyncio.sleep(0.05)

    started, _ = await asyncio.gather(queue.start(command), steps())
    assert started
    assert client.deletes == ["old"]
    assert _emptied("pool") - before == 1
    assert (await env.get(NODECLAIMS, "old"))["metadata"].get("deletionTimestamp")
    assert len(queue) == 0
