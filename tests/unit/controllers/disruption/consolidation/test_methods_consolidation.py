"""Consolidation as disruption methods: the protocol, which candidates they consider, the
command a search becomes (candidates, replacement, budget reason, savings), and the
`Unconsolidatable` events for the nodes it leaves."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.consolidation import consolidation_candidates
from karpy.controllers.disruption.consolidation.methods import (
    MultiNodeConsolidation,
    SingleNodeConsolidation,
    should_consolidate,
)
from karpy.controllers.disruption.events import DedupingEvents
from karpy.controllers.disruption.methods import Method
from karpy.kube import EventRecorder
from karpy.kube.clock import FakeClock
from tests.unit.controllers.disruption.consolidation.states import app_pod, machine, snapshot


class Recorded(EventRecorder):
    """Keeps what would be published (no client behind it)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def publish(self, obj: dict[str, Any], *, type: str, reason: str, message: str) -> None:
        self.seen.append((obj["kind"], obj["metadata"]["name"], reason, message))


def _methods(
    events: DedupingEvents | None = None,
) -> tuple[MultiNodeConsolidation, SingleNodeConsolidation]:
    none: object = None
    return (
        MultiNodeConsolidation(cluster=none, cloud_provider=none, events=events),  # type: ignore[arg-type]
        SingleNodeConsolidation(cluster=none, cloud_provider=none, events=events),  # type: ignore[arg-type]
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
    decision, _ = multi._search(snap, keys, budgets)
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
    assert multi._search(snap, keys, {"default": 1})[0] is None
    one, _ = single._search(snap, keys, {"default": 1})
    assert one is not None and len(one.candidates) == 1
    # the same nodes simulated again still give the command (what validation checks)
    assert multi._resimulate(snap, [command]) == [command]


@pytest.mark.parametrize(
    ("policy", "consolidate_after", "message"),
    [
        ("WhenEmpty", "0s", 'NodePool "default" has non-empty consolidation disabled'),
        ("WhenEmptyOrUnderutilized", "Never", 'NodePool "default" has consolidation disabled'),
    ],
)
def test_a_pool_that_disables_consolidation_says_so_on_its_nodes_every_15_minutes(
    policy: str, consolidate_after: str, message: str
) -> None:
    snap = snapshot([machine("used", "c-8x-amd64-linux")], [app_pod("p", "used", "1")])
    raw = snap.nodepools["default"].to_dict()
    raw["spec"]["disruption"].update(consolidationPolicy=policy, consolidateAfter=consolidate_after)
    pool = type(snap.nodepools["default"]).model_validate(raw)
    used = Candidate(node=snap.nodes[0], nodepool=pool)
    recorder, clock = Recorded(), FakeClock()
    multi, single = _methods(DedupingEvents(recorder, clock=clock))
    assert not multi.should_disrupt(used)
    assert not single.should_disrupt(used)
    expected = [
        ("Node", "used", "Unconsolidatable", message),
        ("NodeClaim", "used", "Unconsolidatable", message),
    ]
    assert recorder.seen == expected
    clock.advance(899)
    assert not single.should_disrupt(used)
    assert recorder.seen == expected
    clock.advance(2)
    assert not single.should_disrupt(used)
    assert recorder.seen == expected * 2


def test_single_node_search_says_why_each_node_stays() -> None:
    machines = [
        # 6 of 8 CPUs used: nowhere else to go, and its own type is the cheapest that holds it
        machine("full", "c-8x-amd64-linux"),
        # a pod whose node selector no other node nor any new node satisfies
        machine("odd", "c-2x-amd64-linux"),
    ]
    pods = [
        app_pod("a1", "full", "3"),
        app_pod("a2", "full", "3"),
        app_pod("o1", "odd", "1", memory="1Gi", spec={"nodeSelector": {"team": "nobody"}}),
    ]
    snap = snapshot(machines, pods)
    loop_candidates = [c.candidate for c in consolidation_candidates(snap)[0]]
    keys = frozenset(c.key for c in loop_candidates)
    recorder = Recorded()
    _, single = _methods(DedupingEvents(recorder, clock=FakeClock()))
    decision, stats = single._search(snap, keys, {"default": 2})
    assert decision is None
    single._unconsolidatable(stats, loop_candidates)
    why = {(kind, name): message for kind, name, reason, message in recorder.seen}
    assert {r for _, _, r, _ in recorder.seen} == {"Unconsolidatable"}
    assert why[("Node", "full")] == "no-cheaper-replacement: Can't replace with a cheaper node"
    assert why[("NodeClaim", "full")] == why[("Node", "full")]
    assert why[("Node", "odd")].startswith("not all pods would schedule, default/o1 => ")
