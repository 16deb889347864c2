"""The disruption methods on constructed states: emptiness (budgets, oldest first, validation
keeps the still-valid subset) and drift (which nodes, in which order, empty ones deleted
without a simulation); the command's decision."""

from __future__ import annotations

import asyncio
from typing import Any

from karpy.apis.v1 import validate_nodepool
from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.methods import Command, Drift, Emptiness, Method, within_budgets
from karpy.state import StateNode
from tests.kit import nodepool, pod, ready_claim_conditions

JSON = dict[str, Any]
STAMP = "2026-01-01T00:00:00Z"
POOL = validate_nodepool(nodepool("pool", consolidate_after="0s"))
NEVER = validate_nodepool(nodepool("pool", consolidate_after="Never"))
RUNNING: JSON = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


def _node(
    name: str,
    *,
    created: str = STAMP,
    consolidatable: bool = True,
    drifted: str | None = None,
    pods: int = 0,
) -> StateNode:
    conds = ready_claim_conditions(STAMP)
    if consolidatable:
        conds.append({"type": "Consolidatable", "status": "True", "lastTransitionTime": STAMP})
    if drifted is not None:
        conds.append(
            {
                "type": "Drifted",
                "status": "True",
                "reason": "NodePoolDrifted",
                "lastTransitionTime": drifted,
            }
        )
    claim = {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "labels": {"karpenter.sh/nodepool": "pool"},
        },
        "status": {"conditions": conds, "nodeName": name, "providerID": f"kwok://{name}"},
    }
    node = {
        "metadata": {
            "name": name,
            "labels": {
                "karpenter.sh/nodepool": "pool",
                "karpenter.sh/registered": "true",
                "karpenter.sh/initialized": "true",
            },
        },
        "spec": {"providerID": f"kwok://{name}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    bound = tuple(
        {**pod(f"{name}-p{i}", "ns", status=RUNNING), "spec": {"nodeName": name, "containers": []}}
        for i in range(pods)
    )
    return StateNode(key=f"kwok://{name}", node=node, nodeclaim=claim, pods=bound)


def _candidate(name: str, pool: Any = POOL, **kw: Any) -> Candidate:
    return Candidate(node=_node(name, **kw), nodepool=pool)


def test_methods_satisfy_the_protocol() -> None:
    assert isinstance(Emptiness(), Method)
    assert isinstance(Drift(cluster=None, cloud_provider=None), Method)  # type: ignore[arg-type]


def test_command_decision_and_noop() -> None:
    assert Command().is_noop
    c = _candidate("a")
    assert Command(candidates=(c,)).decision == "delete"
    assert Command(candidates=(c,), replacements=(object(),)).decision == "replace"  # type: ignore[arg-type]


def test_within_budgets_takes_per_pool_in_order() -> None:
    cs = [_candidate(n) for n in "abc"]
    assert [c.name for c in within_budgets(cs, {"pool": 2})] == ["a", "b"]
    assert within_budgets(cs, {"pool": 0}) == []
    assert within_budgets(cs, {}) == []


def test_emptiness_filters_empty_consolidatable_nodes_of_enabled_pools() -> None:
    method = Emptiness()
    assert method.should_disrupt(_candidate("a"))
    assert not method.should_disrupt(_candidate("a", pods=1))
    assert not method.should_disrupt(_candidate("a", consolidatable=False))
    assert not method.should_disrupt(_candidate("a", pool=NEVER))


def test_emptiness_takes_oldest_first_within_the_budget_in_one_command() -> None:
    method = Emptiness()
    cs = [
        _candidate("young", created="2026-01-03T00:00:00Z"),
        _candidate("old", created="2026-01-01T00:00:00Z"),
        _candidate("mid", created="2026-01-02T00:00:00Z"),
    ]
    command = asyncio.run(method.compute(cs, {"pool": 2}))
    assert [c.name for c in command.candidates] == ["old", "mid"]
    assert command.reason == "Empty" and command.consolidation_type == "empty"
    assert command.decision == "delete"


def test_emptiness_validation_keeps_only_what_still_holds() -> None:
    method = Emptiness()
    cs = [_candidate(n) for n in "abc"]
    command = asyncio.run(method.compute(cs, {"pool": 3}))
    still = [c for c in cs if c.name != "b"]  # a pod arrived on b
    valid = asyncio.run(method.validate(command, still, {"pool": 3}))
    assert [c.name for c in valid.candidates] == ["a", "c"]
    assert asyncio.run(method.validate(command, still, {"pool": 1})).candidates == (still[0],)
    assert asyncio.run(method.validate(command, [], {"pool": 3})).is_noop


def test_drift_considers_drifted_nodes_only() -> None:
    method = Drift(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
    assert method.should_disrupt(_candidate("a", drifted=STAMP))
    assert not method.should_disrupt(_candidate("a"))
    assert not method.needs_validation and not method.graceful


def test_drift_deletes_an_empty_drifted_node_first_without_a_replacement() -> None:
    method = Drift(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
    busy = _candidate("busy", drifted="2026-01-01T00:00:00Z", pods=1)
    empty = _candidate("empty", drifted="2026-01-02T00:00:00Z")
    command = asyncio.run(method.compute([busy, empty], {"pool": 1}))
    assert [c.name for c in command.candidates] == ["empty"]
    assert command.replacements == () and command.reason == "Drifted"


def test_drift_respects_budgets_per_pool() -> None:
    method = Drift(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
    cs = [_candidate("a", drifted=STAMP), _candidate("b", drifted=STAMP)]
    assert asyncio.run(method.compute(cs, {"pool": 0})).is_noop


def test_drift_oldest_drift_first_among_empty_nodes() -> None:
    method = Drift(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
    newer = _candidate("newer", drifted="2026-01-05T00:00:00Z")
    older = _candidate("older", drifted="2026-01-02T00:00:00Z")
    command = asyncio.run(method.compute([newer, older], {"pool": 5}))
    assert [c.name for c in command.candidates] == ["older"]
