"""Budgets per NodePool on a fake clock: counts, percentages rounded up, cron windows in UTC,
reasons, a malformed schedule failing closed, the most restrictive active budget winning, and
nodes already disrupting (not Ready, or being deleted) using up the budget."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from karpy.apis.v1 import NodePool
from karpy.controllers.disruption.budgets import BudgetState, budget_states
from karpy.kube import FakeClock
from karpy.state import StateNode
from tests import kit

MONDAY_10 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def pool(name: str, budgets: list[dict[str, Any]]) -> NodePool:
    return NodePool.model_validate(
        kit.nodepool(name, nodeclass="x", requirements=[], consolidate_after="0s", budgets=budgets)
    )


def state_node(
    name: str,
    pool_name: str = "a",
    *,
    ready: bool = True,
    initialized: bool = True,
    deleting: bool = False,
    marked: bool = False,
    terminating: bool = False,
    managed: bool = True,
) -> StateNode:
    """A registered node of `pool_name` and its NodeClaim (none when not `managed`)."""
    claim_conditions = [{"type": "Initialized", "status": "True" if initialized else "Unknown"}]
    if terminating:
        claim_conditions.append({"type": "InstanceTerminating", "status": "True"})
    node = kit.node(
        name,
        provider_id=f"kwok://{name}",
        labels={"karpenter.sh/nodepool": pool_name, "karpenter.sh/registered": "true"},
        status={"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    )
    claim = kit.nodeclaim(
        name,
        pool=pool_name,
        deleted="2026-01-01T00:00:00Z" if deleting else None,
        status={"conditions": claim_conditions},
    )
    return StateNode(
        key=f"kwok://{name}", node=node, nodeclaim=claim if managed else None, marked=marked
    )


def states(
    pools: list[NodePool],
    nodes: list[StateNode],
    *,
    reason: str = "Empty",
    now: datetime = MONDAY_10,
) -> dict[str, BudgetState]:
    return budget_states(nodes, {p.name: p for p in pools}, reason=reason, now=now)


def test_count_budget_minus_disrupting_nodes() -> None:
    nodes = [
        state_node("n1"),
        state_node("n2"),
        state_node("n3", ready=False),
        state_node("n4", deleting=True),
    ]
    state = states([pool("a", [{"nodes": "3"}])], nodes)["a"]
    assert (state.nodes, state.disrupting, state.allowed, state.remaining) == (4, 2, 3, 1)


def test_marked_for_deletion_uses_budget_and_remaining_never_negative() -> None:
    nodes = [state_node("n1", marked=True), state_node("n2", marked=True), state_node("n3")]
    state = states([pool("a", [{"nodes": "1"}])], nodes)["a"]
    assert state.disrupting == 2
    assert state.remaining == 0


@pytest.mark.parametrize(
    ("percent", "count", "allowed"),
    [("10%", 10, 1), ("10%", 11, 2), ("34%", 3, 2), ("0%", 5, 0), ("100%", 5, 5)],
)
def test_percentages_round_up(percent: str, count: int, allowed: int) -> None:
    nodes = [state_node(f"n{i}") for i in range(count)]
    assert states([pool("a", [{"nodes": percent}])], nodes)["a"].allowed == allowed


def test_only_initialized_managed_nodes_not_terminating_count() -> None:
    nodes = [
        state_node("n1"),
        state_node("n2", initialized=False),
        state_node("n3", terminating=True),
        state_node("n4", managed=False),
        state_node("n5", pool_name="other"),
    ]
    state = states([pool("a", [{"nodes": "100%"}])], nodes)["a"]
    assert state.nodes == 1


def test_cron_window_in_utc_with_a_fake_clock() -> None:
    clock = FakeClock(wall_start=datetime(2026, 11, 30, 8, 59, tzinfo=UTC))  # Monday
    business_hours = pool(
        "a", [{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}, {"nodes": "5"}]
    )
    nodes = [state_node(f"n{i}") for i in range(10)]
    assert states([business_hours], nodes, now=clock.wall())["a"].allowed == 5
    clock.advance(60)  # 09:00: the blocking budget starts
    assert states([business_hours], nodes, now=clock.wall())["a"].allowed == 0
    clock.advance(8 * 3600 - 1)  # 16:59:59
    assert states([business_hours], nodes, now=clock.wall())["a"].allowed == 0
    clock.advance(1)  # 17:00: over
    assert states([business_hours], nodes, now=clock.wall())["a"].allowed == 5


def test_reasons_select_budgets() -> None:
    p = pool("a", [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "2", "reasons": ["Empty"]}])
    nodes = [state_node(f"n{i}") for i in range(10)]
    assert states([p], nodes, reason="Empty")["a"].allowed == 2
    assert states([p], nodes, reason="Drifted")["a"].allowed == 0
    assert states([p], nodes, reason="Underutilized")["a"].allowed == 2**31 - 1


def test_malformed_cron_fails_closed() -> None:
    p = pool("a", [{"nodes": "100%", "schedule": "61 * * * *", "duration": "1h"}])
    assert states([p], [state_node("n1")])["a"].allowed == 0


def test_minimum_over_active_budgets_and_default() -> None:
    p = pool(
        "a",
        [
            {"nodes": "50%"},
            {"nodes": "3"},
            {"nodes": "1", "schedule": "0 0 1 1 *", "duration": "1h"},
        ],
    )
    nodes = [state_node(f"n{i}") for i in range(10)]
    assert states([p], nodes)["a"].allowed == 3
    default = NodePool.model_validate(
        {
            "metadata": {"name": "d"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {"group": "g", "kind": "K", "name": "x"},
                        "requirements": [],
                    }
                }
            },
        }
    )
    assert states([default], [state_node(f"n{i}", "d") for i in range(20)])["d"].allowed == 2


def test_pools_without_nodes_are_reported() -> None:
    assert states([pool("a", [{"nodes": "10%"}])], [])["a"] == BudgetState(0, 0, 0)


def test_next_change_is_when_a_window_changes_the_allowance() -> None:
    from karpy.controllers.disruption.budgets import BudgetChange, next_change, shown

    frozen = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}
    p = pool("a", [{"nodes": "50%"}, frozen])
    before = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    # 4 nodes: 2 allowed until 9:00, then 0 until 17:00, then 2 again
    assert next_change(p, reason="Empty", now=before, num_nodes=4) == BudgetChange(
        at=datetime(2026, 11, 30, 9, 0, tzinfo=UTC), allowed=0
    )
    assert next_change(p, reason="Empty", now=MONDAY_10, num_nodes=4) == BudgetChange(
        at=datetime(2026, 11, 30, 17, 0, tzinfo=UTC), allowed=2
    )
    # a window that changes nothing (a tighter budget always applies) is no change
    hidden = pool("b", [{"nodes": "0"}, {**frozen, "nodes": "1"}])
    assert next_change(hidden, reason="Empty", now=before, num_nodes=4) is None
    # a window limited to other reasons does not change this one
    drift_only = pool("c", [{**frozen, "reasons": ["Drifted"]}])
    assert next_change(drift_only, reason="Empty", now=before, num_nodes=4) is None
    assert next_change(drift_only, reason="Drifted", now=before, num_nodes=4) is not None
    assert shown(2**31 - 1, 4) == 4 and shown(1, 4) == 1
