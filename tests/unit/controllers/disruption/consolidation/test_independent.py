"""Several independent consolidation commands from one pass, on constructed states: found one
after the other on the cluster the earlier ones leave, within the budgets all together, never
sharing a candidate or deleting a node another counts on; validated together, each dropped
alone when it no longer holds."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from karpy.controllers.disruption.consolidation import (
    ConsolidationCandidate,
    Decision,
    SearchStats,
    Snapshot,
    consolidation_candidates,
    multi_node,
    simulate,
    single_node,
)
from karpy.controllers.disruption.consolidation.independent import (
    apply,
    destinations,
    independent,
    reserve,
)
from karpy.controllers.disruption.consolidation.methods import SingleNodeConsolidation
from tests.unit.controllers.disruption.consolidation.states import (
    ON_DEMAND_AMD64,
    app_pod,
    machine,
    snapshot,
)

UNDER_17_CPUS = (
    *ON_DEMAND_AMD64,
    {"key": "karpenter.kwok.sh/instance-cpu", "operator": "Lt", "values": ["17"]},
)


def _multi(
    snap: Snapshot, cs: Sequence[ConsolidationCandidate], budgets: Mapping[str, int], t: float
) -> tuple[Decision | None, SearchStats]:
    return multi_node(snap, cs, budgets=budgets, timeout=t)


def _single(
    snap: Snapshot, cs: Sequence[ConsolidationCandidate], budgets: Mapping[str, int], t: float
) -> tuple[Decision | None, SearchStats]:
    found, stats = single_node(snap, cs, budgets=budgets, timeout=t)
    return (found[0] if found else None), stats


def _six_half_used_m8x() -> Snapshot:
    """Six m-8x nodes with 4.5 CPUs used each, replacements capped at 16 CPUs: one replacement
    holds three of them, never all six."""
    machines = [machine(f"m{i}", "m-8x-amd64-linux") for i in range(6)]
    pods = [app_pod(f"p{i}", f"m{i}", "4500m", memory="10Gi") for i in range(6)]
    return snapshot(machines, pods, requirements=UNDER_17_CPUS)


def _six_light_c8x() -> Snapshot:
    """Six c-8x nodes with 1.5 or 3 CPUs used: their pods fit on two of them."""
    machines = [machine(f"c{i}", "c-8x-amd64-linux") for i in range(6)]
    pods = [app_pod(f"q{i}", f"c{i}", "1500m") for i in range(6)]
    pods += [app_pod(f"r{i}", f"c{i}", "1500m") for i in range(3)]
    return snapshot(machines, pods)


def _disjoint(decisions: Sequence[Decision]) -> None:
    for i, a in enumerate(decisions):
        for b in decisions[i + 1 :]:
            mine, theirs = set(a.names), set(b.names)
            assert not mine & theirs, "two commands share a candidate"
            assert not mine & destinations(b), "a command deletes a node another one fills"
            assert not theirs & destinations(a), "a command deletes a node another one fills"


def test_one_pass_finds_several_replacements_where_one_cannot_hold_all() -> None:
    snap = _six_half_used_m8x()
    candidates, _ = consolidation_candidates(snap)
    one, _ = multi_node(snap, candidates, budgets={"default": 6})
    assert one is not None and len(one.candidates) == 3
    found, stats = independent(snap, candidates, {"default": 6}, _multi, timeout=60)
    assert [d.kind for d in found] == ["replace", "replace"]
    assert sorted(n for d in found for n in d.names) == [f"m{i}" for i in range(6)]
    _disjoint(found)
    assert stats.simulations >= 2 and not stats.timed_out


def test_the_budget_bounds_every_command_of_the_pass_together() -> None:
    snap = _six_half_used_m8x()
    candidates, _ = consolidation_candidates(snap)
    for budget in (2, 3, 4, 5):
        found, _ = independent(snap, candidates, {"default": budget}, _multi, timeout=60)
        assert found
        assert sum(len(d.candidates) for d in found) <= budget
    assert independent(snap, candidates, {"default": 0}, _multi, timeout=60)[0] == []


def test_commands_never_delete_or_overfill_a_node_another_command_relies_on() -> None:
    snap = _six_light_c8x()
    candidates, _ = consolidation_candidates(snap)
    found, _ = independent(snap, candidates, {"default": 6}, _single, timeout=60)
    assert len(found) >= 3 and all(d.kind == "delete" for d in found)
    _disjoint(found)
    # all of them carried out: every pod has a place and no node holds more than it has
    after = snap
    for d in found:
        after = apply(after, d)
    gone = {n for d in found for n in d.names}
    assert {e.name for e in after.base.existing_nodes} == {f"c{i}" for i in range(6)} - gone
    placed = sum(len(e.pods) for e in after.base.existing_nodes)
    assert placed == 9
    for e in after.base.existing_nodes:
        used = sum(p.requests.get("cpu", 0) for p in e.pods)
        assert used <= e.allocatable["cpu"], e.name


def test_a_reserved_node_takes_no_pods() -> None:
    machines = [machine("a", "c-8x-amd64-linux"), machine("b", "c-8x-amd64-linux")]
    snap = snapshot(machines, [app_pod("pa", "a", "1"), app_pod("pb", "b", "1")])
    a = next(c for c in consolidation_candidates(snap)[0] if c.name == "a")
    moved = simulate(snap, [a])
    assert isinstance(moved, Decision) and moved.kind == "delete"
    assert destinations(moved) == {"b"}
    held = simulate(reserve(snap, ["b"]), [a])
    assert not (isinstance(held, Decision) and held.kind == "delete")


def test_validation_drops_only_the_commands_that_no_longer_hold() -> None:
    snap = _six_light_c8x()
    candidates, _ = consolidation_candidates(snap)
    found, _ = independent(snap, candidates, {"default": 6}, _single, timeout=60)
    method = SingleNodeConsolidation(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
    loop = [c.candidate for c in candidates]
    commands = [method._command(d, loop) for d in found]
    assert method._resimulate(snap, commands) == commands
    # every destination filled up meanwhile, but one: only the commands it can hold remain
    fillers = sorted({n for d in found for n in destinations(d)})
    kept_open = fillers[0]
    machines = [machine(f"c{i}", "c-8x-amd64-linux") for i in range(6)]
    pods = [app_pod(f"q{i}", f"c{i}", "1500m") for i in range(6)]
    pods += [app_pod(f"r{i}", f"c{i}", "1500m") for i in range(3)]
    pods += [app_pod(f"new-{n}", n, "4") for n in fillers[1:]]
    changed = snapshot(machines, pods)
    still = method._resimulate(changed, commands)
    assert 0 < len(still) < len(commands)
    assert all(c in commands for c in still)
    relying_on_open = [
        c for c, d in zip(commands, found, strict=True) if destinations(d) == {kept_open}
    ]
    assert still == [c for c in commands if c in relying_on_open][: len(still)]


class _Fixed(SingleNodeConsolidation):
    """Single-node consolidation on a constructed snapshot instead of cluster state."""

    def __init__(self, snap: Snapshot) -> None:
        super().__init__(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
        self.fixed = snap

    async def snapshot(self) -> Snapshot:
        return self.fixed


def test_validation_keeps_the_commands_within_todays_budgets_and_candidates() -> None:
    snap = _six_light_c8x()
    candidates, _ = consolidation_candidates(snap)
    method = _Fixed(snap)
    loop = [c.candidate for c in candidates]
    commands = asyncio.run(method.compute_many(loop, {"default": 6}))
    assert len(commands) >= 3
    assert asyncio.run(method.validate_many(commands, loop, {"default": 6})) == commands
    assert asyncio.run(method.validate_many(commands, loop, {"default": 2})) == commands[:2]
    # a candidate no longer one (say, it got a do-not-disrupt pod): its command alone goes
    gone = commands[1].candidates[0].key
    fewer = [c for c in loop if c.key != gone]
    kept = asyncio.run(method.validate_many(commands, fewer, {"default": 6}))
    assert kept == [c for i, c in enumerate(commands) if i != 1]
