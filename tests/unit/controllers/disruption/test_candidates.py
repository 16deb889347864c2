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
from tests.kit import pdb, pod

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
JSON = dict[str, Any]


CREATED = "2026-01-01T11:00:00Z"
STARTED = "2026-01-01T11:50:00Z"
WEB = {"app": "web"}


READY: JSON = {
    "phase": "Running",
    "startTime": STARTED,
    "conditions": [{"type": "Ready", "status": "True"}],
}
NOT_READY: JSON = {**READY, "conditions": [{"type": "Ready", "status": "False"}]}
SUCCEEDED: JSON = {**READY, "phase": "Succeeded"}
START_UNKNOWN: JSON = {k: v for k, v in READY.items() if k != "startTime"}
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


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
    assert (
        do_not_disrupt_active(
            pod(
                "p",
                "ns",
                labels=WEB,
                annotations={DO_NOT_DISRUPT: value},
                created=CREATED,
                status=READY,
            ),
            NOW,
        )
        is active
    )


def test_do_not_disrupt_duration_from_creation_when_start_unknown() -> None:
    annotated = pod(
        "p",
        "ns",
        labels=WEB,
        annotations={DO_NOT_DISRUPT: "30m"},
        created=CREATED,
        status=START_UNKNOWN,
    )
    assert do_not_disrupt_active(annotated, NOW) is False  # created an hour ago
    assert do_not_disrupt_active(annotated, datetime(2026, 1, 1, 11, 10, tzinfo=UTC)) is True


def test_finished_or_terminating_pods_do_not_block() -> None:
    annotations = {"karpenter.sh/do-not-disrupt": "true"}
    assert not do_not_disrupt_active(
        pod("p", "ns", labels=WEB, annotations=annotations, created=CREATED, status=SUCCEEDED), NOW
    )
    assert not do_not_disrupt_active(
        pod(
            "p",
            "ns",
            labels=WEB,
            annotations=annotations,
            created=CREATED,
            deleted="2026-01-01T11:59:00Z",
            status=READY,
        ),
        NOW,
    )
    assert not do_not_disrupt_active(pod("p", "ns", labels=WEB, created=CREATED, status=READY), NOW)


def test_pdb_with_no_disruptions_allowed_blocks() -> None:
    limits = PdbLimits([pdb("web", "ns", allowed=0, selector={"matchLabels": {"app": "web"}})])
    assert (
        limits.blocking(pod("p", "ns", labels=WEB, created=CREATED, status=READY))
        == 'pdb "ns/web" prevents pod evictions'
    )
    assert (
        limits.blocking(pod("p", "ns", labels={"app": "db"}, created=CREATED, status=READY)) is None
    )


def test_pdb_allowing_disruptions_does_not_block() -> None:
    limits = PdbLimits([pdb("web", "ns", allowed=1, selector={"matchLabels": {"app": "web"}})])
    assert limits.blocking(pod("p", "ns", labels=WEB, created=CREATED, status=READY)) is None


def test_unhealthy_pods_pass_with_always_allow() -> None:
    limits = PdbLimits(
        [
            pdb(
                "web",
                "ns",
                allowed=0,
                selector={"matchLabels": {"app": "web"}},
                unhealthy_policy="AlwaysAllow",
            )
        ]
    )
    assert limits.blocking(pod("p", "ns", labels=WEB, created=CREATED, status=NOT_READY)) is None
    assert limits.blocking(pod("p", "ns", labels=WEB, created=CREATED, status=READY)) is not None


def test_two_pdbs_on_one_pod_block_and_selectors() -> None:
    limits = PdbLimits(
        [
            pdb("a", "ns", allowed=5, selector={"matchLabels": {"app": "web"}}),
            pdb("b", "ns", allowed=5, selector={}),  # empty selector: every pod of the namespace
            pdb("c", "ns", allowed=0, selector=None),  # no selector: no pod
        ]
    )
    reason = limits.blocking(pod("p", "ns", labels=WEB, created=CREATED, status=READY))
    assert reason is not None and "multiple pdbs" in reason
    other_ns = pod("p", "ns", labels=WEB, created=CREATED, status=READY)
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
    nominated = pod("p", "ns", labels=WEB, created=CREATED, status=READY)
    nominated["status"]["nominatedNodeName"] = "c1"
    with pytest.raises(NotCandidate, match="nominated"):
        candidate(_empty_node(planned=(nominated,)), nodepools={"pool": pool}, pdbs=pdbs, now=NOW)
