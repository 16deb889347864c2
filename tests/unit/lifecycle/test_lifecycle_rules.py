"""NodeClaim lifecycle rules: conditions, the registration patch, initialization checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from karpy.controllers.nodeclaim.lifecycle.conditions import ConditionSet
from karpy.controllers.nodeclaim.lifecycle.initialization import why_not_initialized
from karpy.controllers.nodeclaim.lifecycle.registration import registration_patch

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_transition_time_moves_only_with_the_status() -> None:
    status: dict[str, Any] = {}
    conds = ConditionSet(status, now=T0, generation=1)
    conds.initialize(["Launched", "Registered"])
    assert conds.get("Launched") == {
        "type": "Launched",
        "status": "Unknown",
        "reason": "AwaitingReconciliation",
        "message": "object is awaiting reconciliation",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    later = ConditionSet(status, now=T0 + timedelta(minutes=1), generation=1)
    later.set_unknown("Registered", reason="NodeNotFound", message="Node not registered")
    assert later.get("Registered")["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    later.set_true("Launched")
    assert later.get("Launched")["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert later.get("Launched")["reason"] == "Launched"
    assert later.since("Registered") == T0


def test_ready_rolls_up_the_dependents() -> None:
    status: dict[str, Any] = {}
    conds = ConditionSet(status, now=T0, generation=None)
    conds.initialize(["Launched", "Registered", "Initialized"])
    conds.set_true("Launched")
    conds.roll_up("Ready", ["Launched", "Registered", "Initialized"])
    assert conds.get("Ready")["status"] == "Unknown"
    assert conds.get("Ready")["message"] == "Registered=Unknown, Initialized=Unknown"
    conds.set_false("Registered", reason="MultipleNodesFound")
    conds.roll_up("Ready", ["Launched", "Registered", "Initialized"])
    assert conds.get("Ready")["status"] == "False"
    for type_ in ("Registered", "Initialized"):
        conds.set_true(type_)
    conds.roll_up("Ready", ["Launched", "Registered", "Initialized"])
    assert conds.get("Ready")["status"] == "True"


CLAIM: dict[str, Any] = {
    "metadata": {
        "name": "c1",
        "uid": "claim-uid",
        "labels": {"karpenter.sh/nodepool": "p"},
        "annotations": {"karpenter.sh/nodepool-hash": "1"},
    },
    "spec": {
        "taints": [{"key": "dedicated", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "init", "effect": "NoSchedule"}],
        "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}},
    },
}


def _node(**overrides: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "metadata": {"name": "n1", "resourceVersion": "7", "labels": {"x": "y"}},
        "spec": {
            "providerID": "kwok://n1",
            "taints": [
                {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                {"key": "dedicated", "effect": "NoSchedule"},
            ],
        },
        "status": {
            "allocatable": {"cpu": "2", "example.com/gpu": "1"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    node.update(overrides)
    return node


def test_registration_patch_adopts_the_node() -> None:
    patch = registration_patch(_node(), CLAIM)
    meta = patch["metadata"]
    assert meta["labels"] == {"karpenter.sh/nodepool": "p", "karpenter.sh/registered": "true"}
    assert meta["annotations"] == {"karpenter.sh/nodepool-hash": "1"}
    assert meta["finalizers"] == ["karpenter.sh/termination"]
    assert meta["ownerReferences"][0]["uid"] == "claim-uid"
    assert meta["resourceVersion"] == "7"
    assert patch["spec"]["taints"] == [
        {"key": "dedicated", "effect": "NoSchedule"},
        {"key": "init", "effect": "NoSchedule"},
    ]


def test_do_not_sync_taints() -> None:
    node = _node()
    node["metadata"]["labels"]["karpenter.sh/do-not-sync-taints"] = "true"
    assert registration_patch(node, CLAIM)["spec"]["taints"] == [
        {"key": "dedicated", "effect": "NoSchedule"}
    ]


def test_initialization_waits_for_each_condition_in_order() -> None:
    not_ready = _node(status={"conditions": [{"type": "Ready", "status": "False"}]})
    assert why_not_initialized(not_ready, CLAIM) == ("NodeNotReady", "Node status is NotReady")
    tainted = _node()
    tainted["spec"]["taints"].append({"key": "init", "effect": "NoSchedule"})
    assert why_not_initialized(tainted, CLAIM)[0] == "StartupTaintsExist"  # type: ignore[index]
    assert why_not_initialized(_node(), CLAIM)[0] == "KnownEphemeralTaintsExist"  # type: ignore[index]
    clean = _node(spec={"providerID": "kwok://n1"})
    assert why_not_initialized(clean, CLAIM) is None
    no_gpu = _node(
        spec={"providerID": "kwok://n1"},
        status={"allocatable": {"cpu": "2"}, "conditions": [{"type": "Ready", "status": "True"}]},
    )
    assert why_not_initialized(no_gpu, CLAIM) == (
        "ResourceNotRegistered",
        'Resource "example.com/gpu" was requested but not registered',
    )
