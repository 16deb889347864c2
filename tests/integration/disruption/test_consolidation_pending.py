"""Consolidation in-process against a real apiserver leaves room for the pods still to place.

Two c-4x nodes each hold one 1-CPU pod: single-node consolidation deletes one of them, its pod
moving to the other. Once a pending pod the provisioner would provision for asks for 2.5 CPUs,
the simulation places it too (as Karpenter's SimulateScheduling does): the other node cannot
hold both, so the node is replaced by a cheaper one instead of deleted.
"""

from __future__ import annotations

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODEPOOLS
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.controllers.disruption import DisruptionController
from karpy.controllers.disruption.consolidation.methods import SingleNodeConsolidation
from karpy.kube import PODS, EventRecorder
from karpy.state import Cluster
from tests.integration.disruption.support import (
    AMD64_ON_DEMAND,
    Env,
    bare_pod,
    consolidatable_node,
    unschedulable,
    untainted,
)
from tests.kit import kwok_nodeclass, nodepool

pytestmark = pytest.mark.timeout(180)


async def test_pending_pods_take_their_room_before_a_node_is_deleted(
    env: Env, namespace: str
) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    pool = nodepool(
        requirements=AMD64_ON_DEMAND,
        policy="WhenEmptyOrUnderutilized",
        consolidate_after="0s",
        budgets=[{"nodes": "100%"}],
        ready=True,
    )
    await env.create(NODEPOOLS, pool)
    await env.patch_status(NODEPOOLS, "pool", pool["status"])
    for name in ("a", "b"):
        await consolidatable_node(env, name)
    await env.client.create(PODS, bare_pod("p1", namespace, "1", node="a"), namespace=namespace)
    await env.client.create(PODS, bare_pod("p2", namespace, "1", node="b"), namespace=namespace)
    await untainted(env, ["a", "b"])
    cluster = Cluster(env.cache)
    single = SingleNodeConsolidation(
        cluster=cluster,
        cloud_provider=KwokCloudProvider(
            client=env.client, cache=env.cache, instance_types=kwok_instance_types()
        ),
    )
    loop = DisruptionController(
        client=env.client,
        cluster=cluster,
        events=EventRecorder(env.client),
        methods=[single],
    )

    def two_busy_nodes() -> bool:
        nodes = cluster.nodes()
        return cluster.synced() and len(nodes) == 2 and all(n.pods for n in nodes)

    await env.until(two_busy_nodes, message="two nodes with their pods in cluster state")
    candidates, budgets = loop.prepare(single, publish=False)
    assert len(candidates) == 2
    command = await single.compute(candidates, budgets)
    assert command.decision == "delete" and len(command.candidates) == 1

    await unschedulable(env, namespace, "waiting", "2500m")
    await env.until(
        lambda: [p["metadata"]["name"] for p in cluster.provisionable_pods()] == ["waiting"],
        message="the pending pod in cluster state",
    )
    candidates, budgets = loop.prepare(single, publish=False)
    command = await single.compute(candidates, budgets)
    assert command.decision == "replace", "the pending pod's room was handed to a moved pod"
    assert len(command.candidates) == 1 and len(command.replacements) == 1
    assert command.savings is not None and command.savings > 0
