"""End to end: a CapacityBuffer on a running `karpy run` (CapacityBuffer gate) with kwok nodes.

The NodePool offers one type, c-2x (1.9 CPU allocatable), so each 1-CPU chunk takes a node of
its own and the room is countable. A buffer of 3 x 1 CPU gets three nodes with no pod on them,
which consolidation leaves alone; a Deployment of 3 x 1 CPU then binds at once onto those nodes
(no launch), and the buffer's room is refilled behind it; deleting the buffer lets consolidation
remove the spare nodes, keeping the Deployment's.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.support import (
    bound_pods,
    condition,
    deployment,
    holds,
    nodeclaims,
    nodes,
    tainted,
    wait_for,
)
from tests.kit import LINUX_AMD64_ON_DEMAND, capacitybuffer, podtemplate

pytestmark = pytest.mark.timeout(900)
JSON = dict[str, Any]
POOL = "buffer"
TYPE = "c-2x-amd64-linux"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def _buffer(kubectl: Kubectl, namespace: str) -> JSON:
    found: JSON = kubectl.json("get", "capacitybuffers", "room", f"--namespace={namespace}")
    return found


def _provisioning(buffer: JSON) -> str | None:
    found = condition(buffer, "Provisioning")
    return None if found is None else str(found.get("reason"))


def _live(kubectl: Kubectl) -> list[JSON]:
    return [
        n
        for n in nodes(kubectl, selector=f"karpenter.sh/nodepool={POOL}")
        if not n["metadata"].get("deletionTimestamp")
    ]


def _busy(kubectl: Kubectl, namespace: str) -> set[str]:
    return {p["spec"]["nodeName"] for p in bound_pods(kubectl, namespace, "app=web")}


def test_a_buffer_keeps_room_that_a_deployment_takes_at_once(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    karpy = karpy_factory({"FEATURE_GATES": "CapacityBuffer=true"})
    kwok_pool(
        POOL,
        requirements=[
            *LINUX_AMD64_ON_DEMAND,
            {"key": INSTANCE_TYPE, "operator": "In", "values": [TYPE]},
        ],
        consolidate_after="5s",
        policy="WhenEmptyOrUnderutilized",
        budgets=[{"nodes": "100%"}],
    )
    kubectl.apply(podtemplate("chunk", namespace, cpu="1"))
    kubectl.apply(capacitybuffer("room", namespace, podTemplateRef={"name": "chunk"}, replicas=3))

    # the status as the API defines it
    def ready() -> JSON | None:
        buffer = _buffer(kubectl, namespace)
        ok = condition(buffer, "ReadyForProvisioning")
        return buffer if ok is not None and ok.get("status") == "True" else None

    status = wait_for(ready, timeout=90, message="the buffer ReadyForProvisioning")["status"]
    assert status["podTemplateRef"] == {"name": "chunk"}
    assert status["replicas"] == 3
    assert status["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"

    # room for three chunks: three nodes, no pod of ours on them
    wait_for(lambda: len(_live(kubectl)) == 3, timeout=180, message="three buffer nodes")
    wait_for(
        lambda: _provisioning(_buffer(kubectl, namespace)) == "FitsExistingCapacity",
        timeout=60,
        message="Provisioning FitsExistingCapacity",
    )
    assert all(n["metadata"]["labels"][INSTANCE_TYPE] == TYPE for n in _live(kubectl))
    spare = {n["metadata"]["name"] for n in _live(kubectl)}
    claims = {c["metadata"]["name"] for c in nodeclaims(kubectl)}

    # consolidation (after 5 s) keeps the buffer's empty nodes through three complete passes
    def kept() -> None:
        assert {n["metadata"]["name"] for n in _live(kubectl)} == spare
        assert {c["metadata"]["name"] for c in nodeclaims(kubectl)} == claims
        assert not [n["metadata"]["name"] for n in _live(kubectl) if tainted(n)]

    holds(kept, passes=karpy.disruption_passes, at_least=5)

    # a Deployment of three such pods binds at once onto the buffer's nodes, with no launch
    started = time.monotonic()
    kubectl.apply(deployment("web", namespace, replicas=3, cpu="1", memory="256Mi"))
    wait_for(lambda: len(_busy(kubectl, namespace)) == 3, timeout=60, message="3 pods bound")
    took = time.monotonic() - started
    assert _busy(kubectl, namespace) <= spare, "a pod went to a node launched after it"

    # the buffer's room is refilled behind them: three more nodes, empty of ours
    wait_for(lambda: len(_live(kubectl)) == 6, timeout=180, message="the buffer refilled")
    refill = {n["metadata"]["name"] for n in _live(kubectl)} - spare
    assert len(refill) == 3 and not refill & _busy(kubectl, namespace)

    # without the buffer, consolidation removes the spare room and keeps the Deployment's
    kubectl("delete", "capacitybuffer", "room", f"--namespace={namespace}")
    wait_for(lambda: len(_live(kubectl)) == 3, timeout=240, message="the spare nodes removed")
    assert {n["metadata"]["name"] for n in _live(kubectl)} == _busy(kubectl, namespace)
    assert took < 60
