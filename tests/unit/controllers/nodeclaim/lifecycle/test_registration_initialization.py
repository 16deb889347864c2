"""NodeClaim lifecycle rules: the registration patch, initialization checks (conditions:
tests/unit/apis/test_conditions.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from karpy.controllers.nodeclaim.lifecycle.initialization import why_not_initialized
from karpy.controllers.nodeclaim.lifecycle.registration import registration_patch
from tests import kit
from tests.kit import served

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


TAINTS = (
    {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    {"key": "dedicated", "effect": "NoSchedule"},
)
READY = {"type": "Ready", "status": "True"}


# Node n1 of the claim, ready, with a GPU and the unregistered taint.
n1 = partial(
    kit.node,
    "n1",
    provider_id="kwok://n1",
    labels={"x": "y"},
    taints=TAINTS,
    status={"allocatable": {"cpu": "2", "example.com/gpu": "1"}, "conditions": [READY]},
)


def test_registration_patch_adopts_the_node() -> None:
    patch = registration_patch(served(n1(), rv="7"), CLAIM)
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


def test_labels_the_kubelet_may_not_set_are_applied_at_registration() -> None:
    """The AWS user data keeps node-restriction.kubernetes.io and other kubernetes.io labels
    the kubelet refuses out of --node-labels; registration puts them on the Node."""
    claim = {
        **CLAIM,
        "metadata": {
            **CLAIM["metadata"],
            "labels": {"karpenter.sh/nodepool": "p", "node-restriction.kubernetes.io/fenced": "a"},
        },
    }
    labels = registration_patch(served(n1(), rv="7"), claim)["metadata"]["labels"]
    assert labels["node-restriction.kubernetes.io/fenced"] == "a"


def test_do_not_sync_taints() -> None:
    node = served(n1(), rv="7")
    node["metadata"]["labels"]["karpenter.sh/do-not-sync-taints"] = "true"
    assert registration_patch(node, CLAIM)["spec"]["taints"] == [
        {"key": "dedicated", "effect": "NoSchedule"}
    ]


def test_initialization_waits_for_each_condition_in_order() -> None:
    not_ready = served(n1(status={"conditions": [{"type": "Ready", "status": "False"}]}), rv="7")
    assert why_not_initialized(not_ready, CLAIM) == ("NodeNotReady", "Node status is NotReady")
    tainted = served(n1(), rv="7")
    tainted["spec"]["taints"].append({"key": "init", "effect": "NoSchedule"})
    assert why_not_initialized(tainted, CLAIM)[0] == "StartupTaintsExist"  # type: ignore[index]
    unregistered = served(n1(), rv="7")
    assert why_not_initialized(unregistered, CLAIM)[0] == "KnownEphemeralTaintsExist"  # type: ignore[index]
    clean = served(n1(taints=None), rv="7")
    assert why_not_initialized(clean, CLAIM) is None
    no_gpu = served(
        n1(taints=None, status={"allocatable": {"cpu": "2"}, "conditions": [READY]}), rv="7"
    )
    assert why_not_initialized(no_gpu, CLAIM) == (
        "ResourceNotRegistered",
        'Resource "example.com/gpu" was requested but not registered',
    )
