"""The blocker taxonomy: each reason word with the object it names, per disruption method."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from karpy.apis.v1 import NodePool, validate_nodepool
from karpy.controllers.disruption.blocker import REASONS
from karpy.controllers.disruption.blockers import Verdict, node_verdicts
from karpy.controllers.disruption.budgets import budget_states
from karpy.controllers.disruption.candidates import PdbLimits
from karpy.state import StateNode
from tests.kit import pdb, pod

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
JSON = dict[str, Any]
WEB = {"app": "web"}
READY: JSON = {
    "phase": "Running",
    "startTime": "2026-01-01T11:00:00Z",
    "conditions": [{"type": "Ready", "status": "True"}],
}


def _pool(disruption: JSON | None = None, **spec: Any) -> NodePool:
    return validate_nodepool(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "pool"},
            "spec": {
                "disruption": {"consolidateAfter": "0s", **(disruption or {})},
                "template": {
                    "spec": {
                        "requirements": [],
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "c",
                        },
                    }
                },
                **spec,
            },
        }
    )


def _node(
    *,
    pods: tuple[JSON, ...] = (),
    initialized: bool = True,
    consolidatable: bool = True,
    annotations: JSON | None = None,
    nominated: bool = False,
) -> StateNode:
    conditions = [{"type": t, "status": "True"} for t in ("Launched", "Registered")]
    conditions.append({"type": "Initialized", "status": str(initialized)})
    if consolidatable:
        conditions.append({"type": "Consolidatable", "status": "True"})
    claim = {
        "metadata": {"name": "c1", "labels": {"karpenter.sh/nodepool": "pool"}},
        "status": {
            "providerID": "kwok://c1",
            "conditions": conditions,
            "lastPodEventTime": "2026-01-01T11:58:00Z",
        },
    }
    labels = {"karpenter.sh/nodepool": "pool", "karpenter.sh/registered": "true"}
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    node = {
        "metadata": {"name": "c1", "labels": labels, "annotations": annotations or {}},
        "spec": {"providerID": "kwok://c1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    return StateNode(key="kwok://c1", node=node, nodeclaim=claim, pods=pods, nominated=nominated)


def _web(annotations: JSON | None = None) -> JSON:
    return pod("web", "ns", node="c1", labels=WEB, annotations=annotations, status=READY)


def _verdicts(
    node: StateNode,
    pool: NodePool,
    *,
    pdbs: tuple[JSON, ...] = (),
    searched: dict[str, str] | None = None,
) -> dict[str, Verdict]:
    pools = {"pool": pool}
    budgets = {
        r: budget_states([node], pools, reason=r, now=NOW)
        for r in ("Empty", "Drifted", "Underutilized")
    }
    found = node_verdicts(
        node,
        nodepools=pools,
        pdbs=PdbLimits(pdbs),
        now=NOW,
        budgets=budgets,
        searched=searched,
    )
    return {v.method: v for v in found}


def _blocker(v: Verdict) -> tuple[str, str]:
    assert v.blocker is not None, v
    return v.blocker.reason, v.blocker.object


def test_a_node_free_to_go_is_a_candidate_of_consolidation() -> None:
    got = _verdicts(_node(pods=(_web(),)), _pool())
    assert got["consolidation"].candidate
    assert not got["emptiness"].applies and got["emptiness"].blocker is None
    assert not got["drift"].applies


def test_pdb_names_the_budget() -> None:
    guard = pdb("guard", "ns", selector={"matchLabels": WEB}, allowed=0)
    got = _verdicts(_node(pods=(_web(),)), _pool(), pdbs=(guard,))
    assert _blocker(got["consolidation"]) == ("pdb", "PodDisruptionBudget/ns/guard")


def test_do_not_disrupt_names_the_pod_or_the_node() -> None:
    annotated = _web({"karpenter.sh/do-not-disrupt": "true"})
    got = _verdicts(_node(pods=(annotated,)), _pool())
    assert _blocker(got["consolidation"]) == ("do-not-disrupt", "Pod/ns/web")
    node = _node(annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert _blocker(_verdicts(node, _pool())["emptiness"]) == ("do-not-disrupt", "Node/c1")


def test_not_initialized_and_nominated() -> None:
    got = _verdicts(_node(initialized=False), _pool())
    assert _blocker(got["emptiness"]) == ("not-initialized", "Node/c1")
    got = _verdicts(_node(nominated=True), _pool())
    assert _blocker(got["drift"]) == ("nominated", "Node/c1")


def test_budget_zero_in_a_cron_window_names_the_nodepool_and_schedule() -> None:
    window = {"nodes": "0", "schedule": "0 * * * *", "duration": "1h"}
    got = _verdicts(_node(pods=(_web(),)), _pool({"budgets": [window]}))
    assert _blocker(got["consolidation"]) == ("budget", "NodePool/pool")
    assert got["consolidation"].blocker is not None
    assert '"0 * * * *"' in got["consolidation"].blocker.detail
    # outside the window (a schedule that fires at 03:00 for 1h) the node is a candidate
    later = {"nodes": "0", "schedule": "0 3 * * *", "duration": "1h"}
    assert _verdicts(_node(pods=(_web(),)), _pool({"budgets": [later]}))["consolidation"].candidate


def test_consolidate_after_not_elapsed_says_the_time_left() -> None:
    got = _verdicts(_node(pods=(_web(),), consolidatable=False), _pool({"consolidateAfter": "10m"}))
    assert _blocker(got["consolidation"]) == ("consolidate-after", "NodePool/pool")
    assert got["consolidation"].blocker is not None
    assert "480s left" in got["consolidation"].blocker.detail  # last pod event 2 minutes ago


def test_static_nodepool() -> None:
    got = _verdicts(_node(pods=(_web(),)), _pool(replicas=1))
    assert _blocker(got["consolidation"]) == ("static-nodepool", "NodePool/pool")


def test_the_single_node_search_gives_price_blockers() -> None:
    node = _node(pods=(_web(),))
    for word in ("no-cheaper-replacement", "spot-to-spot"):
        got = _verdicts(node, _pool(), searched={node.key: word})
        assert _blocker(got["consolidation"]) == (word, "Node/c1")
    assert len(REASONS) == 10
