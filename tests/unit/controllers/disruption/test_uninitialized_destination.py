"""A disruption's simulation refuses a move to a node that has not initialized, as Karpenter's
`UninitializedNodeError`: the pod is reported as not schedulable (with Karpenter's wording),
so drift does not act while the pods it moves depend on such a node."""

from __future__ import annotations

from typing import Any

from karpy.controllers.disruption.methods.drift import not_all_pods_schedule
from karpy.controllers.disruption.methods.simulation import simulate
from karpy.state import ClusterSnapshot, StateNode
from tests.kit import pod, ready_claim_conditions
from tests.unit.scheduling.engine.builders import linux_amd64, template

JSON = dict[str, Any]
STAMP = "2026-01-01T00:00:00Z"
RUNNING: JSON = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
ROOM = {"cpu": "4", "memory": "16Gi", "pods": "110"}


def _node(name: str, *, initialized: bool, pods: int = 0) -> StateNode:
    conds = ready_claim_conditions(STAMP)
    if not initialized:
        conds = [c for c in conds if c["type"] not in ("Initialized", "Ready")]
    labels = {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/registered": "true",
        "kubernetes.io/hostname": name,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/zone": "test-zone-a",
    }
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    claim = {
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
        "status": {"conditions": conds, "nodeName": name, "providerID": f"kwok://{name}"},
    }
    node = {
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"kwok://{name}"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": ROOM,
            "capacity": ROOM,
        },
    }
    bound = tuple(
        {
            **pod(f"{name}-p{i}", "ns", requests={"cpu": "1"}, status=RUNNING),
            "spec": {
                "nodeName": name,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
        for i in range(pods)
    )
    return StateNode(key=f"kwok://{name}", node=node, nodeclaim=claim, pods=bound)


def _plan(fresh_initialized: bool) -> tuple[Any, list[JSON]]:
    old = _node("old", initialized=True, pods=1)
    fresh = _node("fresh", initialized=fresh_initialized)
    snapshot = ClusterSnapshot(nodes=(old, fresh), daemonsets=(), namespace_labels={})
    moving = list(old.pods)
    result = simulate(snapshot, {old.key}, moving, [template(types=linux_amd64())])
    return result, moving


def test_a_pod_whose_destination_has_not_initialized_is_not_schedulable_for_disruption() -> None:
    result, _ = _plan(fresh_initialized=False)
    why = "would schedule against uninitialized nodeclaim/fresh, node/fresh"
    assert result.errors == {"ns/old-p0": why}
    assert not any(result.existing.values())
    assert (
        not_all_pods_schedule(result.errors) == f"Not all pods would schedule, ns/old-p0 => {why}"
    )


def test_the_same_node_takes_the_pod_once_it_has_initialized() -> None:
    result, _ = _plan(fresh_initialized=True)
    assert result.errors == {}
    assert [p.key for p in result.existing["fresh"]] == ["ns/old-p0"]
    assert not result.node_claims
