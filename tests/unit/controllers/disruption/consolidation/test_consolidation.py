"""Consolidation on constructed states: delete, merge into a cheaper node, and every rule that
says no (PDBs, do-not-disrupt, consolidateAfter, same-type swaps, spot-to-spot, minValues)."""

from __future__ import annotations

import pytest

from karpy.controllers.disruption.consolidation import (
    Decision,
    Infeasible,
    approved,
    consolidation_candidates,
    multi_node,
    simulate,
    single_node,
)
from tests.kit import nodeoverlay, pdb, schedulingconfig
from tests.unit.controllers.disruption.consolidation.states import (
    ON_DEMAND_AMD64,
    TYPES,
    app_pod,
    machine,
    snapshot,
)


def _price(name: str, zone: str = "test-zone-a", ct: str = "on-demand") -> float:
    return next(o.price for o in TYPES[name].offerings if o.zone == zone and o.capacity_type == ct)


def test_underused_node_is_deleted_when_its_pods_fit_elsewhere() -> None:
    machines = [machine(f"n{i}", "c-8x-amd64-linux") for i in range(3)]
    pods = [
        app_pod("small", "n0", "500m"),
        app_pod("a", "n1", "2"),
        app_pod("b", "n2", "2"),
    ]
    snap = snapshot(machines, pods)
    candidates, blocked = consolidation_candidates(snap)
    assert {c.name for c in candidates} == {"n0", "n1", "n2"}
    assert blocked == {}
    found, stats = single_node(snap, candidates)
    assert len(found) == 1 and found[0].kind == "delete"
    decision = found[0]
    assert len(decision.candidates) == 1
    moved = decision.moves
    (node,) = decision.names
    assert set(moved.values()) <= {"n0", "n1", "n2"} - {node}
    assert decision.savings == pytest.approx(_price("c-8x-amd64-linux"))
    assert stats.simulations >= 1


def test_two_half_empty_nodes_merge_into_one_cheaper_node() -> None:
    machines = [machine("big-a", "m-8x-amd64-linux"), machine("big-b", "m-8x-amd64-linux")]
    # 4.5 of 8 CPUs used on each: neither takes the other's pods; one node of the cheaper
    # s family with 16 CPUs and 32Gi takes both
    pods = [
        app_pod("a1", "big-a", "4500m", memory="10Gi"),
        app_pod("b1", "big-b", "4500m", memory="10Gi"),
    ]
    snap = snapshot(machines, pods, budgets=[{"nodes": "100%"}])
    candidates, _ = consolidation_candidates(snap)
    decision, _ = multi_node(snap, candidates)
    assert decision is not None
    assert sorted(decision.names) == ["big-a", "big-b"]
    assert decision.kind == "replace"
    assert decision.replacement is not None
    assert decision.replacement_price < 2 * _price("m-8x-amd64-linux")
    assert set(decision.moves.values()) == {"<replacement>"}


def test_replacements_keep_to_the_scheduling_configs() -> None:
    """The same merge with a SchedulingConfig (karpy's extension) that rules out the s family
    on the NodePool's NodeClass: the replacement comes from another family."""
    machines = [machine("big-a", "m-8x-amd64-linux"), machine("big-b", "m-8x-amd64-linux")]
    pods = [
        app_pod("a1", "big-a", "4500m", memory="10Gi"),
        app_pod("b1", "big-b", "4500m", memory="10Gi"),
    ]
    family = "karpenter.kwok.sh/instance-family"
    config = schedulingconfig(requirements=[{"key": family, "operator": "NotIn", "values": ["s"]}])
    unconstrained = snapshot(machines, pods, budgets=[{"nodes": "100%"}])
    decision, _ = multi_node(unconstrained, consolidation_candidates(unconstrained)[0])
    assert decision is not None and decision.replacement is not None
    assert "s" in {t.requirements[family].any_value() for t in decision.replacement.instance_types}
    snap = snapshot(machines, pods, budgets=[{"nodes": "100%"}], configs=[config])
    decision, _ = multi_node(snap, consolidation_candidates(snap)[0])
    assert decision is not None and decision.replacement is not None
    families = {t.requirements[family].any_value() for t in decision.replacement.instance_types}
    assert families and "s" not in families


def test_a_node_of_a_discounted_family_is_priced_at_the_overlay_price() -> None:
    """An m node whose pod a cheaper c node would hold is replaced, unless a NodeOverlay makes
    m the cheaper family: then the node is priced at the overlay's price like the replacements,
    and nothing is cheaper than it."""
    machines = [machine("m", "m-2x-amd64-linux")]
    pods = [app_pod("a", "m", "1500m")]
    plain = snapshot(machines, pods)
    found, _ = single_node(plain, consolidation_candidates(plain)[0])
    assert [d.kind for d in found] == ["replace"]
    family = {"key": "karpenter.kwok.sh/instance-family", "operator": "In", "values": ["m"]}
    discount = nodeoverlay("m-half", requirements=[family], priceAdjustment="-50%")
    snap = snapshot(machines, pods, overlays=[discount])
    found, _ = single_node(snap, consolidation_candidates(snap)[0])
    assert found == []


def test_one_node_takes_the_other_when_it_has_room() -> None:
    machines = [machine("a", "c-8x-amd64-linux"), machine("b", "c-8x-amd64-linux")]
    pods = [app_pod("a1", "a", "3"), app_pod("b1", "b", "3")]
    snap = snapshot(machines, pods, budgets=[{"nodes": "100%"}])
    candidates, _ = consolidation_candidates(snap)
    found, _ = single_node(snap, candidates)
    assert [d.kind for d in found] == ["delete"]
    multi, _ = multi_node(snap, candidates)
    # both onto a new node of their own type would be one of them again: one goes, its pod
    # moves to the other (not both onto a dearer type of another family)
    assert multi is not None and multi.kind == "delete" and len(multi.candidates) == 1
    assert multi.savings == pytest.approx(_price("c-8x-amd64-linux"))


def test_nothing_when_a_pdb_forbids_eviction() -> None:
    machines = [machine("a", "c-8x-amd64-linux"), machine("b", "c-8x-amd64-linux")]
    pods = [
        app_pod("guarded", "a", "500m", labels={"app": "guarded"}),
        app_pod("busy", "b", "7500m"),
    ]
    blocking = pdb("guard", selector={"matchLabels": {"app": "guarded"}}, allowed=0)
    snap = snapshot(machines, pods, pdbs=[blocking])
    candidates, blocked = consolidation_candidates(snap)
    assert [c.name for c in candidates] == ["b"]
    assert blocked["a"] == 'pdb "default/guard" prevents pod evictions'
    found, _ = single_node(snap, candidates)
    assert found == []
    # with headroom in the PDB the same node goes
    open_pdb = pdb("guard", selector={"matchLabels": {"app": "guarded"}}, allowed=1)
    snap = snapshot(machines, pods, pdbs=[open_pdb])
    candidates, _ = consolidation_candidates(snap)
    found, _ = single_node(snap, candidates)
    assert [d.names for d in found] == [["a"]]


@pytest.mark.parametrize("value", ["true", "3h"])  # the pod started 2 hours ago
def test_do_not_disrupt_pod_blocks_its_node(value: str) -> None:
    machines = [machine("a", "c-8x-amd64-linux"), machine("b", "c-8x-amd64-linux")]
    pods = [
        app_pod("kept", "a", "500m", annotations={"karpenter.sh/do-not-disrupt": value}),
        app_pod("busy", "b", "7500m"),
    ]
    snap = snapshot(machines, pods)
    candidates, blocked = consolidation_candidates(snap)
    assert [c.name for c in candidates] == ["b"]
    assert "do-not-disrupt" in blocked["a"]
    assert single_node(snap, candidates)[0] == []


def test_expired_do_not_disrupt_duration_does_not_block() -> None:
    machines = [machine("a", "c-8x-amd64-linux"), machine("b", "c-8x-amd64-linux")]
    pods = [
        app_pod("kept", "a", "500m", annotations={"karpenter.sh/do-not-disrupt": "1m"}),
        app_pod("busy", "b", "2"),
    ]
    snap = snapshot(machines, pods)
    candidates, _ = consolidation_candidates(snap)
    assert {c.name for c in candidates} == {"a", "b"}


def test_do_not_disrupt_node_and_unconsolidatable_node_are_not_candidates() -> None:
    machines = [
        machine("kept", "c-8x-amd64-linux", annotations={"karpenter.sh/do-not-disrupt": "true"}),
        machine("young", "c-8x-amd64-linux", consolidatable=False),
        machine("c", "c-8x-amd64-linux"),
    ]
    pods = [app_pod("p1", "kept", "1"), app_pod("p2", "young", "1"), app_pod("p3", "c", "1")]
    snap = snapshot(machines, pods)
    candidates, blocked = consolidation_candidates(snap)
    assert [c.name for c in candidates] == ["c"]
    assert "do-not-disrupt" in blocked["kept"]
    assert "consolidateAfter" in blocked["young"]


def test_when_empty_policy_never_consolidates_underused_nodes() -> None:
    machines = [machine("a", "c-8x-amd64-linux"), machine("b", "c-8x-amd64-linux")]
    pods = [app_pod("a1", "a", "1"), app_pod("b1", "b", "1")]
    snap = snapshot(machines, pods, policy="WhenEmpty")
    candidates, _ = consolidation_candidates(snap)
    assert candidates == []


def test_never_swapped_for_its_own_type_in_its_zone_and_capacity_type() -> None:
    # 6 CPUs of pods: the cheapest type that holds them is the node's own type
    machines = [machine("a", "c-8x-amd64-linux")]
    pods = [app_pod("a1", "a", "3"), app_pod("a2", "a", "3")]
    snap = snapshot(machines, pods)
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Infeasible)
    assert outcome.reason == "Can't replace with a cheaper node"


def test_replacement_is_cheaper_and_leaves_out_the_nodes_own_type() -> None:
    machines = [machine("a", "c-16x-amd64-linux")]
    pods = [app_pod("a1", "a", "2"), app_pod("a2", "a", "2")]
    snap = snapshot(machines, pods)
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Decision) and outcome.kind == "replace"
    assert outcome.replacement is not None
    names = [t.name for t in outcome.replacement.instance_types]
    assert "c-16x-amd64-linux" not in names
    assert names[0] == "c-8x-amd64-linux"
    assert outcome.replacement_price < _price("c-16x-amd64-linux")


def test_min_savings_share_rejects_small_savings() -> None:
    machines = [machine("a", "c-16x-amd64-linux")]
    pods = [app_pod("a1", "a", "2"), app_pod("a2", "a", "2")]
    # c-8x costs half of c-16x: a 60% saving requirement leaves nothing
    snap = snapshot(machines, pods, min_savings=0.6)
    candidates, _ = consolidation_candidates(snap)
    assert isinstance(simulate(snap, candidates), Infeasible)


SPOT = (
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
)


def test_spot_to_spot_needs_the_gate_and_keeps_fifteen_types() -> None:
    machines = [machine("a", "c-16x-amd64-linux", capacity_type="spot")]
    pods = [app_pod("a1", "a", "1")]
    snap = snapshot(machines, pods, requirements=SPOT)
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Infeasible)
    assert "SpotToSpotConsolidation is disabled" in outcome.reason
    snap = snapshot(machines, pods, requirements=SPOT, spot_to_spot=True)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Decision) and outcome.kind == "replace"
    assert outcome.replacement is not None
    assert len(outcome.replacement.instance_types) == 15


def test_spot_to_spot_with_fewer_than_fifteen_cheaper_types_is_refused() -> None:
    machines = [machine("a", "c-2x-amd64-linux", capacity_type="spot")]
    pods = [app_pod("a1", "a", "500m")]
    snap = snapshot(machines, pods, requirements=SPOT, spot_to_spot=True)
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Infeasible)
    assert "requires 15 cheaper instance type options" in outcome.reason


def _min_values(n: int) -> list[dict[str, object]]:
    exists = {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": n}
    return [*ON_DEMAND_AMD64, exists]


def test_cheaper_types_must_still_meet_min_values() -> None:
    machines = [machine("a", "c-4x-amd64-linux")]
    pods = [app_pod("a1", "a", "1")]
    # three cheaper types hold the pod: minValues 3 replaces, 4 does not (min-values)
    snap = snapshot(machines, pods, requirements=_min_values(3))
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Decision) and outcome.replacement is not None
    assert len(outcome.replacement.instance_types) == 3
    snap = snapshot(machines, pods, requirements=_min_values(4))
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Infeasible) and outcome.blocker == "min-values"
    assert outcome.reason == (
        "minValues requirement is not met for node.kubernetes.io/instance-type (3 cheaper < 4)"
    )
    decisions, stats = single_node(snap, candidates)
    assert decisions == [] and stats.blockers == {"kwok://a": "min-values"}


def test_spot_to_spot_keeps_as_many_types_as_min_values_needs() -> None:
    machines = [machine("a", "c-16x-amd64-linux", capacity_type="spot")]
    pods = [app_pod("a1", "a", "1")]
    # 18 spot types are cheaper: minValues 17 keeps 17 of them, not 15
    exists = {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 17}
    snap = snapshot(machines, pods, requirements=[*SPOT, exists], spot_to_spot=True)
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Decision) and outcome.replacement is not None
    assert len(outcome.replacement.instance_types) == 17


def test_budget_of_zero_stops_consolidation() -> None:
    machines = [machine(f"n{i}", "c-8x-amd64-linux") for i in range(3)]
    pods = [app_pod(f"p{i}", f"n{i}", "500m") for i in range(3)]
    snap = snapshot(machines, pods, budgets=[{"nodes": "0"}])
    candidates, _ = consolidation_candidates(snap)
    assert len(candidates) == 3
    assert single_node(snap, candidates)[0] == []
    assert multi_node(snap, candidates)[0] is None


def test_multi_node_takes_as_many_nodes_as_fit_elsewhere() -> None:
    machines = [machine(f"n{i}", "c-8x-amd64-linux") for i in range(6)]
    pods = [app_pod(f"p{i}", f"n{i}", "1") for i in range(6)]
    snap = snapshot(machines, pods, budgets=[{"nodes": "100%"}])
    candidates, _ = consolidation_candidates(snap)
    decision, _ = multi_node(snap, candidates)
    assert decision is not None and decision.kind == "delete"
    # six 1-CPU pods fit on one 8-CPU node: five nodes go
    assert len(decision.candidates) == 5


def test_balanced_refuses_moves_that_disrupt_more_than_they_save() -> None:
    machines = [machine(f"n{i}", "c-8x-amd64-linux") for i in range(4)]
    pods = [app_pod(f"p{i}-{j}", f"n{i}", "100m") for i in range(4) for j in range(2)]
    snap = snapshot(machines, pods, policy="Balanced")
    candidates, _ = consolidation_candidates(snap)
    delete_one = simulate(snap, candidates[:1])
    assert isinstance(delete_one, Decision)
    # one of four equal nodes: saves 1/4 of the cost for 1/4 of the disruption
    assert approved(snap, delete_one)
    heavy = [app_pod(f"h{j}", "n3", "100m") for j in range(30)]
    snap = snapshot(machines, [*pods, *heavy], policy="Balanced")
    candidates, _ = consolidation_candidates(snap)
    crowded = next(c for c in candidates if c.name == "n3")
    outcome = simulate(snap, [crowded])
    assert isinstance(outcome, Decision)
    # the crowded node holds most of the pool's pods: 1/4 of the cost for ~80% of disruption
    assert not approved(snap, outcome)


def test_pods_the_engine_packs_onto_two_equal_priced_nodes_get_one_replacement() -> None:
    # four 500m pods: two 2-CPU nodes cost as much as one 4-CPU node, and the engine may pack
    # either way; consolidation needs one replacement, so the claims are merged
    machines = [machine("n", "c-16x-amd64-linux")]
    pods = [app_pod(f"w{i}", "n", "500m", memory="512Mi") for i in range(4)]
    snap = snapshot(machines, pods)
    candidates, _ = consolidation_candidates(snap)
    outcome = simulate(snap, candidates)
    assert isinstance(outcome, Decision) and outcome.kind == "replace"
    assert outcome.replacement is not None
    assert len(outcome.replacement.pods) == 4
    assert outcome.replacement_price < _price("c-16x-amd64-linux") / 2
    assert set(outcome.moves.values()) == {"<replacement>"}


def test_multi_node_growth_runs_at_most_its_probe_budget() -> None:
    # six nodes with a 6-CPU pod and six with a 500m pod, no type above 8 CPUs: the prefix
    # search settles on a set, then growth tries the other candidates one simulation each
    # (least used first), no more of them than it is allowed
    machines = [machine(f"n{i:02d}", "c-8x-amd64-linux") for i in range(12)]
    pods = [app_pod(f"p{i}", f"n{i:02d}", "6" if i < 6 else "500m") for i in range(12)]
    small = [
        *ON_DEMAND_AMD64,
        {"key": "karpenter.kwok.sh/instance-cpu", "operator": "Lt", "values": ["9"]},
    ]
    snap = snapshot(machines, pods, budgets=[{"nodes": "100%"}], requirements=small)
    candidates, _ = consolidation_candidates(snap)
    searched, base = multi_node(snap, candidates, growth_probes=0)
    grown, one = multi_node(snap, candidates, growth_probes=1)
    _, unlimited = multi_node(snap, candidates, growth_probes=1000)
    assert searched is not None and grown is not None
    assert one.simulations == base.simulations + 1
    assert unlimited.simulations > one.simulations
    assert len(grown.candidates) >= len(searched.candidates)
