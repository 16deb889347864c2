"""`karpy simulate --disruption --from-cluster` against the session's real apiserver.

Two c-4x nodes of a consolidating NodePool each hold one 1-CPU pod: one node can take the
other's pod, so the plan deletes a node. Once a pending pod karpy would provision for
(PodScheduled=False, Unschedulable) asks for 2.5 CPUs, the simulation places it along with
the moved pod, as `karpy run`'s does: the other node cannot hold both, and the plan becomes a
replace; `karpy simulate`'s cost of the pods counts the pending pod too. An empty node goes by
emptiness, unless a ready CapacityBuffer's virtual pod needs it; nothing in the cluster changes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest

from karpy.apis.descriptors import CAPACITYBUFFERS, KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.kube import NODES, PODS
from karpy.kube.resources import PODTEMPLATES
from tests.integration.disruption.support import (
    AMD64_ON_DEMAND,
    Env,
    bare_pod,
    consolidatable_node,
    unschedulable,
    untainted,
)
from tests.kit import capacitybuffer, conditions, kwok_nodeclass, nodepool, podtemplate

pytestmark = pytest.mark.timeout(240)
JSON = dict[str, Any]


async def _simulate(kubeconfig: str) -> JSON:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "karpy.cli",
        "simulate",
        "--disruption",
        "--from-cluster",
        "-o",
        "json",
        env={**os.environ, "KUBECONFIG": kubeconfig},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    plan: JSON = json.loads(out)
    return plan


async def _diagnosis(env: Env, plan: JSON) -> str:
    """What a failed plan assertion needs: the plan's commands and blocked nodes, and each
    Node's taints and Ready condition as the apiserver has them now."""
    nodes = [
        (node["metadata"]["name"], node["spec"].get("taints"), conditions(node).get("Ready"))
        for node in (await env.client.list(NODES)).items
    ]
    return f"commands={plan['commands']} blocked={plan['blocked']} nodes={nodes}"


async def _consolidating_pool(env: Env) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(
        NODEPOOLS,
        nodepool(
            requirements=AMD64_ON_DEMAND,
            policy="WhenEmptyOrUnderutilized",
            consolidate_after="0s",
            budgets=[{"nodes": "100%"}],
        ),
    )


async def test_from_cluster_plans_on_the_live_objects_with_their_pending_pods(
    env: Env, kubeconfig: str, namespace: str
) -> None:
    await _consolidating_pool(env)
    for name in ("a", "b", "idle"):
        await consolidatable_node(env, name)
    await env.client.create(PODS, bare_pod("p1", namespace, "1", node="a"), namespace=namespace)
    await env.client.create(PODS, bare_pod("p2", namespace, "1", node="b"), namespace=namespace)
    await untainted(env, ["a", "b", "idle"])

    before = await _simulate(kubeconfig)
    first, *rest = before["commands"]
    assert (first["method"], first["decision"]) == ("emptiness", "delete")
    assert [n["name"] for n in first["nodes"]] == ["idle"]
    assert rest and rest[0]["decision"] == "delete", await _diagnosis(env, before)
    assert rest[0]["nodes"][0]["name"] in {"a", "b"}
    assert before["summary"]["replacements"] == 0

    await unschedulable(env, namespace, "waiting", "2500m")
    after = await _simulate(kubeconfig)
    decisions = [(c["method"], c["decision"]) for c in after["commands"]]
    assert decisions[0] == ("emptiness", "delete")
    assert any(d == "replace" for _, d in decisions[1:]), after["commands"]
    assert not any(
        c["decision"] == "delete" and c["method"] != "emptiness" for c in after["commands"]
    ), "a node deleted as if the pending pod needed no room"
    assert after["summary"]["simulateCost"] > before["summary"]["simulateCost"]
    # read only: the cluster is as it was
    listed = await env.client.list(NODES)
    assert sorted(n["metadata"]["name"] for n in listed.items) == ["a", "b", "idle"]
    claims = await env.client.list(NODECLAIMS)
    assert not any(c["metadata"].get("deletionTimestamp") for c in claims.items)


async def test_from_cluster_keeps_the_room_a_ready_buffer_needs(
    env: Env, kubeconfig: str, namespace: str
) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(
        NODEPOOLS,
        nodepool(
            requirements=AMD64_ON_DEMAND,
            policy="WhenEmptyOrUnderutilized",
            consolidate_after="0s",
            budgets=[{"nodes": "100%"}],
        ),
    )
    for name in ("a", "idle"):
        await consolidatable_node(env, name)
    await env.client.create(PODS, bare_pod("p1", namespace, "1", node="a"), namespace=namespace)
    await untainted(env, ["a", "idle"])
    # a chunk of 3.5 CPU fits only on the idle node (a has a 1-CPU pod)
    await env.client.create(PODTEMPLATES, podtemplate("chunk", namespace, cpu="3500m"))
    await env.client.create(
        CAPACITYBUFFERS,
        capacitybuffer("room", namespace, podTemplateRef={"name": "chunk"}, replicas=1),
    )
    without = await _simulate(kubeconfig)
    assert "idle" in {n["name"] for c in without["commands"] for n in c["nodes"]}

    # the status capacitybuffer.status writes: the plan takes the buffer as `karpy run` does
    await env.client.patch_status(
        CAPACITYBUFFERS,
        "room",
        {
            "status": {
                "podTemplateRef": {"name": "chunk"},
                "replicas": 1,
                "conditions": [
                    {
                        "type": "ReadyForProvisioning",
                        "status": "True",
                        "reason": "Resolved",
                        "message": "Pod template resolved successfully",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
            }
        },
        namespace=namespace,
    )
    kept = await _simulate(kubeconfig)
    assert "idle" not in {n["name"] for c in kept["commands"] for n in c["nodes"]}, kept
