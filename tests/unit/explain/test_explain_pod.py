"""`karpy explain pod` on listed objects: a NodePool whose NodeClass is not Ready is named as
such, the others by their first misfit."""

from __future__ import annotations

from typing import Any

from karpy.explain.cluster import view_of
from karpy.explain.pod import explain_pod
from karpy.simulation.live import KINDS
from tests.kit import nodepool, pod

JSON = dict[str, Any]
ARM: JSON = {"nodeSelector": {"kubernetes.io/arch": "arm64"}}
UNSCHEDULABLE: JSON = {
    "phase": "Pending",
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
}


def test_nodeclass_not_ready_and_requirement() -> None:
    waiting = nodepool("waiting")
    waiting["status"] = {
        "conditions": [
            {
                "type": "NodeClassReady",
                "status": "False",
                "reason": "NodeClassNotFound",
                "message": "KWOKNodeClass not found",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    amd = nodepool(
        "amd",
        requirements=[{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
    )
    pending = pod("arm", "ns", requests={"cpu": "1"}, spec=ARM, status=UNSCHEDULABLE)
    listed: dict[str, list[JSON]] = {k.plural: [] for k in KINDS}
    listed["nodepools"] = [waiting, amd]
    listed["pods"] = [pending]
    view = view_of(listed)
    assert not view.warnings
    answer = explain_pod(view, pending)
    got = {p["nodePool"]: p for p in answer["nodePools"]}
    assert answer["state"] == "pending"
    assert (got["waiting"]["reason"], got["waiting"]["object"]) == (
        "nodeclass-not-ready",
        "KWOKNodeClass/default",
    )
    assert got["amd"]["reason"] == "requirement"
    assert got["amd"]["object"] == "Requirement/kubernetes.io/arch"
