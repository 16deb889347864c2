"""NodeClaim lifecycle rules: the registration patch, initialization checks (conditions:
tests/unit/apis/test_conditions.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from karpy.controllers.nodeclaim.lifecycle.initialization import why_not_initialized
from karpy.controllers.nodeclaim.lifecycle.registration import registration_patch

T0 = datetime(2026, 1, 1, tzinfo=UTC)


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
