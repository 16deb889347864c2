"""Blockers of disruption: do-not-disrupt (true or a duration), PDB limits, pods on their way."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from karpy.apis.v1 import validate_nodepool
from karpy.controllers.disruption.candidates import (
    NotCandidate,
    PdbLimits,
    candidate,
    do_not_disrupt_active,
)
from karpy.state import StateNode

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def pod(
    annotations: dict[str, str] | None = None,
    *,
    labels: dict[str, str] | None = None,
    start: str | None = "2026-01-01T11:50:00Z",
    phase: str = "Running",
    ready: bool = True,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "p",
        "namespace": "ns",
        "annotations": annotations or {},
        "labels": labels or {"app": "web"},
        "creationTimestamp": "2026-01-01T11:00:00Z",
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if start:
        status["startTime"] = start
    return {"metadata": meta, "spec": {}, "status": status}


@pytest.mark.parametrize(
    ("value", "active"),
    [
        ("true", True),
        ("false", False),
        ("", False),
        ("5m", False),  # started 10 minutes ago
        ("15m", True),
        ("1h", True),
        ("0s", False),
        ("soon", True),  # malformed: the user asked for something, so respect it
    ],
)
def test_do_not_disrupt_values(value: str, active: bool) -> None:
    assert do_not_disrupt_active(pod({"karpenter.sh/do-not-disrupt": value}), NOW) is active


def test_do_not_disrupt_duration_from_creation_when_start_unknown() -> None:
    annotated = pod({"karpenter.sh/do-not-disrupt": "30m"}, start=None)
    assert do_not_disrupt_active(annotated, NOW) is False  # created an hour ago
    assert do_not_disrupt_active(annotated, datetime(2026, 1, 1, 11, 10, tzinfo=UTC)) is True


def test_finished_or_terminating_pods_do_not_block() -> None:
    annotations = {"karpenter.sh/do-not-disrupt": "true"}
    assert not do_not_disrupt_active(pod(annotations, phase="Succeeded"), NOW)
    assert not do_not_disrupt_active(pod(annotations, deleting=True), NOW)
    assert not do_not_disrupt_active(pod(), NOW)


def pdb(
    name: str, allowed: int, *, selector: dict[str, Any] | None, policy: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": selector}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
        "status": {"disruptionsAllowed": allowed},
    }


def test_pdb_with_no_disruptions_allowed_blocks() -> None:
    limits = PdbLimits([pdb("web", 0, selector={"matchLabels": {"app": "web"}})])
    assert limits.blocking(pod()) == 'pdb "ns/web" prevents pod evictions'
    assert limits.blocking(pod(labels={"app": "db"})) is None


def test_pdb_allowing_disruptions_does_not_block() -> None:
    limits = PdbLimits([pdb("web", 1, selector={"matchLabels": {"app": "web"}})])
    assert limits.blocking(pod()) is None


def test_unhealthy_pods_pass_with_always_allow() -> None:
    limits = PdbLimits(
        [pdb("web", 0, selector={"matchLabels": {"app": "web"}}, policy="AlwaysAllow")]
    )
    assert limits.blocking(pod(ready=False)) is None
    assert limits.blocking(pod(ready=True)) is not None


def test_two_pdbs_on_one_pod_block_and_selectors() -> None:
    limits = PdbLimits(
        [
            pdb("a", 5, selector={"matchLabels": {"app": "web"}}),
            pdb("b", 5, selector={}),  # empty selector: every pod of the namespace
            pdb("c", 0, selector=None),  # no selector: no pod
        ]
    )
    reason = limits.blocking(pod())
    assert reason is not None and "multiple pdbs" in reason
    other_ns = pod()
    other_ns["metadata"]["namespace"] = "elsewhere"
    assert limits.blocking(other_ns) is None


def _empty_node(*, planned: tuple[dict[str, Any], ...] = ()) -> StateNode:
    claim = {
        "metadata": {"name": "c1", "labels": {"karpenter.sh/nodepool": "pool"}},
        "status": {
            "providerID": "kwok://c1",
            "conditions": [
                {"type": t, "status": "True"} for t in ("Launched", "Registered", "Initialized")
            ],
        },
    }
    node = {
        "metadata": {
            "name": "c1",
            "labels": {
                "karpenter.sh/nodepool": "pool",
                "karpenter.sh/registered": "true",
                "karpenter.sh/initialized": "true",
            },
        },
        "spec": {"providerID": "kwok://c1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    return StateNode(key="kwok://c1", node=node, nodeclaim=claim, planned=planned)


def test_a_node_with_pods_on_their_way_is_not_a_candidate() -> None:
    pool = validate_nodepool(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "pool"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [],
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "c",
                        },
                    }
                }
            },
        }
    )
    pdbs = PdbLimits([])
    assert candidate(_empty_node(), nodepools={"pool": pool}, pdbs=pdbs, now=NOW).is_empty()
    nominated = pod()
    nominated["status"]["nominatedNodeName"] = "c1"
    with pytest.raises(NotCandidate, match="nominated"):
        candidate(_empty_node(planned=(nominated,)), nodepools={"pool": pool}, pdbs=pdbs, now=NOW)
