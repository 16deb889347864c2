"""Consolidation as disruption methods: the protocol, which candidates they consider, and the
command a search becomes (candidates, replacement, budget reason, savings)."""

from __future__ import annotations

from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.consolidation import consolidation_candidates
from karpy.controllers.disruption.consolidation.methods import (
    MultiNodeConsolidation,
    SingleNodeConsolidation,
    should_consolidate,
)
from karpy.controllers.disruption.methods import Method
from tests.unit.controllers.disruption.consolidation.states import app_pod, machine, snapshot


def _methods() -> tuple[MultiNodeConsolidation, SingleNodeConsolidation]:
    none: object = None
    return (
        MultiNodeConsolidation(cluster=none, cloud_provider=none),  # type: ignore[arg-type]
        SingleNodeConsolidation(cluster=none, cloud_provider=none),  # type: ignore[arg-type]
    )


def test_methods_satisfy_the_protocol_and_spend_underutilized() -> None:
    for m in _methods():
        assert isinstance(m, Method)
        assert m.reason == "Underutilized"
        assert m.needs_validation and m.graceful
    assert [m.consolidation_type for m in _methods()] == ["multi", "single"]


def test_should_consolidate_takes_underused_consolidatable_nodes_only() -> None:
    machines = [
        machine("used", "c-8x-amd64-linux"),
        machine("empty", "c-8x-amd64-linux"),
        machine("young", "c-8x-amd64-linux", consolidatable=False),
    ]
    pods = [app_pod("p", "used", "1"), app_pod("q", "young", "1")]
    snap = snapshot(machines, pods)
    by_name = {n.name: Candidate(node=n, nodepool=snap.nodepools["default"]) for n in snap.nodes}
    assert should_consolidate(by_name["used"])
    assert not should_consolidate(by_name["empty"])  # emptiness takes it
    assert not should_consolidate(by_name["young"])
    when_empty = snapshot(machines, pods, policy="WhenEmpty")
    used = next(n for n in when_empty.nodes if n.name == "used")
    assert not should_consolidate(Candidate(node=used, nodepool=when_empty.nodepools["default"]))


def test_search_becomes_a_command_with_the_loops_candidates() -> None:
    machines = [machine("big-a", "m-8x-amd64-linux"), machine("big-b", "m-8x-amd64-linux")]
    pods = [
        app_pod("a1", "big-a", "4500m", memory="10Gi"),
        app_pod("b1", "big-b", "4500m", memory="10Gi"),
    ]
    snap = snapshot(machines, pods)
    loop_candidates = [c.candidate for c in consolidation_candidates(snap)[0]]
    keys = frozenset(c.key for c in loop_candidates)
    multi, single = _methods()
    budgets = {"default": 2}
    decision = multi._search(snap, keys, budgets)
    assert decision is not None and decision.kind == "replace"
    command = multi._command(decision, loop_candidates)
    assert command.decision == "replace"
    assert {c.name for c in command.candidates} == {"big-a", "big-b"}
    assert all(any(c is lc for lc in loop_candidates) for c in command.candidates)
    assert len(command.replacements) == 1
    assert command.reason == "Underutilized" and command.consolidation_type == "multi"
    assert command.savings is not None and command.savings > 0
    assert command.pods == 2
    # a budget of one node: multi-node has nothing, single-node replaces one node at a time
    assert multi._search(snap, keys, {"default": 1}) is None
    one = single._search(snap, keys, {"default": 1})
    assert one is not None and len(one.candidates) == 1
    # the same nodes simulated again still give the command (what validation checks)
    again = multi._resimulate(snap, command.keys())
    assert again is not None and again.kind == "replace"
