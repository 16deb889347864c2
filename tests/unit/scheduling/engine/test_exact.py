"""The exact planner against independent optima on hundreds of small random batches.

For batches of up to seven pods the brute force lists every partition of the pods into nodes
and prices each part as the cheapest existing node (free) or purchase that admits it, reading
only the raw pod dicts and the catalogue; larger batches are checked against the independent
slot MILP of `optimum.py` beside this test (the test's own code, not the planner's; the
optimality benchmark borrows it). A plan must be feasible (independent checker), never dearer
than the heuristic alone, never cheaper than the optimum, and when it says it is optimal,
exactly as cheap.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from karpy.scheduling.engine import exact
from karpy.scheduling.engine.exact.existing_first import existing_first
from karpy.scheduling.engine.exact.milp import Solution
from karpy.scheduling.engine.exact.problem import build
from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.pods import pod_view
from tests.unit.scheduling.engine.builders import (
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    anti_affinity,
    node,
    raw_pod,
    spread,
    template,
)
from tests.unit.scheduling.engine.checker import check_plan, requests
from tests.unit.scheduling.engine.optimum import optimum

ZONES = ["za", "zb"]
CTS = ["on-demand", "spot"]
GI = 1024**3


def _catalogue(rng: random.Random) -> list[InstanceType]:
    shapes = rng.sample([(1, 2), (2, 4), (2, 8), (4, 8), (4, 16), (8, 16), (8, 32), (16, 32)], 5)
    out = []
    for i, (cpu, mem) in enumerate(shapes):
        offerings = [
            Offering(
                zone=z,
                capacity_type=ct,
                price=round(cpu * 0.04 * (0.35 if ct == "spot" else 1) * rng.uniform(0.8, 1.2), 5),
                available=rng.random() > 0.15,
            )
            for z in ZONES
            for ct in CTS
        ]
        out.append(
            InstanceType(
                name=f"t{i}",
                capacity={"cpu": cpu * 1000, "memory": mem * GI, "pods": 110},
                offerings=offerings,
            )
        )
    return out


def _scenario(
    rng: random.Random, pods: tuple[int, int] = (2, 6), zonal: bool = False
) -> tuple[SchedulingInput, list[dict[str, Any]], list[dict[str, Any]]]:
    types = _catalogue(rng)
    shapes = []
    for s in range(rng.randint(1, 3)):
        spec: dict[str, Any] = {}
        labels = {"app": f"a{s}"}
        selector: dict[str, str] = {}
        if rng.random() < 0.25:
            selector[ZONE] = rng.choice(ZONES)
        if rng.random() < 0.25:
            selector[CAPACITY_TYPE] = rng.choice(CTS)
        if selector:
            spec["nodeSelector"] = selector
        if zonal and rng.random() < 0.6:
            spec["topologySpreadConstraints"] = spread(ZONE, labels, skew=rng.choice([1, 2]))
            if rng.random() < 0.3:
                # 3 > the two zones: at most maxSkew pods per zone; 2: no effect
                spec["topologySpreadConstraints"][0]["minDomains"] = rng.choice([2, 3])
        elif rng.random() < 0.3:
            spec["affinity"] = anti_affinity(HOSTNAME, {"app": rng.choice(["a0", f"a{s}"])})
        elif rng.random() < 0.25:
            spec["topologySpreadConstraints"] = spread(HOSTNAME, labels, skew=rng.choice([1, 2]))
        shapes.append(
            (
                rng.choice(["250m", "500m", "1", "1500m", "3"]),
                rng.choice(["256Mi", "1Gi", "3Gi", "6Gi"]),
                labels,
                spec,
            )
        )
    raws = []
    for i in range(rng.randint(*pods)):
        cpu, mem, labels, spec = rng.choice(shapes)
        raws.append(raw_pod(f"p{i}", cpu=cpu, memory=mem, labels=labels, **spec))
    if rng.random() < 0.1:
        raws.append(raw_pod("huge", cpu="100", memory="1Gi"))  # no type holds it
    daemons = []
    if rng.random() < 0.5:
        daemons.append(raw_pod("ds", cpu="100m", memory="128Mi"))
    existing = []
    for e in range(rng.choice([0, 0, 1, 2])):
        existing.append(
            node(
                f"n{e}",
                cpu=rng.choice([500, 1000, 2000]),
                memory=rng.choice([1, 4]) * GI,
                labels={ZONE: rng.choice(ZONES), CAPACITY_TYPE: "on-demand"},
            )
        )
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws],
        templates=[template(types=types)],
        daemonset_pods=[pod_view(d, daemon=True) for d in daemons],
        existing_nodes=existing,
    )
    return inp, raws, daemons


# ---- the brute force ---------------------------------------------------------------------------


def _partitions(items: list[int]) -> Iterator[list[list[int]]]:
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        for i in range(len(part)):
            yield [*part[:i], [first, *part[i]], *part[i + 1 :]]
        yield [[first], *part]


def _clash(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def hits(p: dict[str, Any], q: dict[str, Any]) -> bool:
        terms = (
            (p["spec"].get("affinity") or {})
            .get("podAntiAffinity", {})
            .get("requiredDuringSchedulingIgnoredDuringExecution", [])
        )
        return any(
            all(
                q["metadata"]["labels"].get(k) == v
                for k, v in t["labelSelector"]["matchLabels"].items()
            )
            for t in terms
        )

    return hits(a, b) or hits(b, a)


def _spread_ok(ps: Sequence[dict[str, Any]]) -> bool:
    """Hostname spreads: every new or existing node is a domain holding none of the pods yet,
    so a node may hold at most maxSkew of the pods a spread counts."""
    for p in ps:
        for sc in p["spec"].get("topologySpreadConstraints") or []:
            want = sc["labelSelector"]["matchLabels"]
            n = sum(all(q["metadata"]["labels"].get(k) == v for k, v in want.items()) for q in ps)
            if n > sc["maxSkew"]:
                return False
    return True


def _labels_ok(raw: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in (raw["spec"].get("nodeSelector") or {}).items())


def _sum(raws: Sequence[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in raws:
        for k, v in requests(r).items():
            out[k] = out.get(k, 0) + v
    return out


def _fits(need: dict[str, int], room: dict[str, int]) -> bool:
    return all(v <= room.get(k, 0) for k, v in need.items())


def brute_force(
    inp: SchedulingInput, raws: list[dict[str, Any]], daemons: list[dict[str, Any]]
) -> float:
    overhead = _sum(daemons)
    types = inp.templates[0].instance_types
    best = float("inf")
    cache: dict[tuple[int, ...], tuple[float, list[int]]] = {}

    def price(block: tuple[int, ...]) -> tuple[float, list[int]]:
        got = cache.get(block)
        if got is not None:
            return got
        ps = [raws[i] for i in block]
        if any(_clash(a, b) for a, b in itertools.combinations(ps, 2)) or not _spread_ok(ps):
            cache[block] = (float("inf"), [])
            return cache[block]
        need = _sum(ps)
        new = float("inf")
        for it in types:
            room = {k: v - overhead.get(k, 0) for k, v in it.capacity.items()}
            if not _fits(need, room):
                continue
            for o in it.offerings:
                labels = {ZONE: o.zone, CAPACITY_TYPE: o.capacity_type}
                if o.available and all(_labels_ok(p, labels) for p in ps):
                    new = min(new, o.price)
        hosts = []
        for e, n in enumerate(inp.existing_nodes):
            free = dict(n.allocatable)
            for k, v in overhead.items():
                free[k] = free.get(k, 0) - v
            if _fits(need, free) and all(_labels_ok(p, dict(n.labels)) for p in ps):
                hosts.append(e)
        cache[block] = (new, hosts)
        return cache[block]

    for part in _partitions(list(range(len(raws)))):
        blocks = [tuple(sorted(b)) for b in part]
        # each block buys a node or takes a distinct existing node
        choices = [[-1, *price(b)[1]] for b in blocks]
        for pick in itertools.product(*choices):
            used = [e for e in pick if e >= 0]
            if len(used) != len(set(used)):
                continue
            cost = sum(price(b)[0] for b, e in zip(blocks, pick, strict=True) if e < 0)
            best = min(best, cost)
    return best


# ---- the property ------------------------------------------------------------------------------


def _heuristic(inp: SchedulingInput) -> SchedulingResult:
    inp.exact_seconds = 0
    try:
        return schedule(inp)
    finally:
        inp.exact_seconds = exact.TIME_BUDGET


def test_exact_plans_are_feasible_and_no_dearer_than_the_optimum() -> None:
    rng = random.Random(20261201)
    proven = improved = 0
    cases = 250
    for _ in range(cases):
        inp, raws, daemons = _scenario(rng)
        heuristic = _heuristic(inp)
        result = exact.improve(inp, heuristic, budget=2.0)
        check_plan(inp, raws, result, raw_daemons=daemons)
        assert result.cost <= heuristic.cost + 1e-9
        assert result.errors == heuristic.errors
        placed = [r for r in raws if f"default/{r['metadata']['name']}" not in result.errors]
        optimum = brute_force(inp, placed, daemons)
        assert optimum <= result.cost + 1e-6, "the brute force missed a plan"
        if result.optimal:
            proven += 1
            assert result.cost == pytest.approx(optimum, rel=2e-5, abs=1e-6), result.exact
            assert result.gap is not None and result.gap <= 1e-6
        if result.cost < heuristic.cost - 1e-9:
            improved += 1
    assert proven >= 0.9 * cases
    assert improved > 0


@pytest.mark.parametrize(
    ("seed", "pods", "zonal"), [(16, (8, 18), False), (17, (2, 12), True)], ids=["larger", "zonal"]
)
def test_against_an_independent_milp(seed: int, pods: tuple[int, int], zonal: bool) -> None:
    rng = random.Random(seed)
    proven = known = spread_modelled = 0
    cases = 40
    for _ in range(cases):
        inp, raws, daemons = _scenario(rng, pods=pods, zonal=zonal)
        heuristic = _heuristic(inp)
        result = exact.improve(inp, heuristic, budget=2.0)
        check_plan(inp, raws, result, raw_daemons=daemons)
        assert result.cost <= heuristic.cost + 1e-9
        spread_modelled += "not modelled" not in result.exact and any(
            "topologySpreadConstraints" in r["spec"] for r in raws
        )
        placed = [r for r in raws if f"default/{r['metadata']['name']}" not in result.errors]
        best = optimum(
            placed,
            inp.templates[0].instance_types,
            inp.existing_nodes,
            daemons,
            upper=heuristic.cost,
            seconds=60,
        )
        if best is None:
            continue
        known += 1
        assert best <= result.cost + 1e-6, "the reference MILP missed a plan"
        if result.optimal:
            proven += 1
            assert result.cost == pytest.approx(best, rel=2e-5, abs=1e-6), result.exact
    assert known >= 0.9 * cases
    assert proven >= 0.9 * known
    if zonal:
        assert spread_modelled >= 0.25 * cases


def test_out_of_reach_batches_keep_the_heuristic_plan_and_say_why() -> None:
    raws = [
        raw_pod(
            f"s{i}",
            labels={"app": "s"},
            topologySpreadConstraints=[
                {
                    "maxSkew": 1,
                    "minDomains": 3,
                    "topologyKey": HOSTNAME,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "s"}},
                }
            ],
        )
        for i in range(3)
    ]
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws], templates=[template(types=_catalogue(random.Random(1)))]
    )
    heuristic = _heuristic(inp)
    result = exact.improve(inp, heuristic)
    assert not result.optimal
    assert result.node_claims is heuristic.node_claims
    assert "topology spread" in result.exact


def test_on_equal_cost_fewer_nodes() -> None:
    # two 1-cpu pods: one 2-cpu node costs exactly what two 1-cpu nodes cost
    types = [
        InstanceType(
            name=f"c{c}",
            capacity={"cpu": c * 1000, "memory": 8 * GI, "pods": 110},
            offerings=[Offering(zone="za", capacity_type="on-demand", price=0.1 * c)],
        )
        for c in (1, 2)
    ]
    raws = [raw_pod(f"p{i}", cpu="900m", memory="1Gi") for i in range(2)]
    inp = SchedulingInput(pods=[pod_view(r) for r in raws], templates=[template(types=types)])
    result = schedule(inp)
    assert result.optimal
    assert len(result.node_claims) == 1
    assert result.cost == pytest.approx(0.2)


def _flat(name: str, cpus: Sequence[int], price_per_cpu: float) -> list[InstanceType]:
    return [
        InstanceType(
            name=f"{name}{c}",
            capacity={"cpu": c * 1000, "memory": 64 * GI, "pods": 110},
            offerings=[Offering(zone="za", capacity_type="on-demand", price=price_per_cpu * c)],
        )
        for c in cpus
    ]


def test_nodepool_weights_are_kept() -> None:
    # the heavier pool is dearer, but Karpenter launches from it while it can
    heavy = template("heavy", types=_flat("h", (1, 2, 4), 0.2), weight=10)
    light = template("light", types=_flat("l", (1, 2, 4), 0.05))
    raws = [raw_pod(f"p{i}", cpu="900m", memory="1Gi") for i in range(3)]
    inp = SchedulingInput(pods=[pod_view(r) for r in raws], templates=[heavy, light])
    result = schedule(inp)
    check_plan(inp, raws, result)
    assert {c.nodepool for c in result.node_claims} == {"heavy"}
    assert result.optimal


def test_nodepool_limits_are_kept() -> None:
    # the heavy pool may launch 2 cpu more; the rest goes to the light pool
    heavy = template("heavy", types=_flat("h", (1, 2, 4), 0.05), weight=10, limits={"cpu": 2000})
    light = template("light", types=_flat("l", (1, 2, 4), 0.2))
    raws = [raw_pod(f"p{i}", cpu="900m", memory="1Gi") for i in range(4)]
    inp = SchedulingInput(pods=[pod_view(r) for r in raws], templates=[heavy, light])
    result = schedule(inp)
    check_plan(inp, raws, result)
    heavy_cpu = sum(
        max(t.capacity["cpu"] for t in c.instance_types)
        for c in result.node_claims
        if c.nodepool == "heavy"
    )
    assert heavy_cpu <= 2000
    assert result.cost == pytest.approx(2 * 0.05 + 2 * 0.2)
    assert result.optimal


def test_pods_an_existing_node_can_take_leave_the_new_nodes() -> None:
    # A solve cut by its limits can return an incumbent that buys room for a pod an existing
    # node still has room for (at equal price): Karpenter fills existing nodes first.
    types = _flat("c", (1, 2, 4), 0.05)
    raws = [raw_pod(f"p{i}", cpu="900m", memory="1Gi") for i in range(3)]
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws],
        templates=[template(types=types)],
        existing_nodes=[node("n1", cpu=1000)],
    )
    problem = build(inp, _heuristic(inp))
    assert not isinstance(problem, str)
    cpu = problem.dims.index["cpu"]
    one, two = (next(o for o in problem.options if o.alloc[cpu] >= need) for need in (900, 1800))
    incumbent = Solution([(one, {0: 1}), (two, {0: 2})], {}, False, 0.0, "node limit")
    moved = existing_first(problem, incumbent)
    assert moved.existing == {0: {0: 1}}
    assert moved.nodes == [(two, {0: 2})]
    # nothing to move: the solution is returned as it is
    assert existing_first(problem, moved) is moved


def test_zonal_spread_with_more_min_domains_than_zones_caps_each_zone() -> None:
    # two zones, minDomains 3: the minimum counts as 0, so each zone takes at most maxSkew pods
    sc = spread(ZONE, {"app": "s"}, skew=1)
    sc[0]["minDomains"] = 3
    raws = [
        raw_pod(f"s{i}", cpu="500m", labels={"app": "s"}, topologySpreadConstraints=sc)
        for i in range(4)
    ]
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws], templates=[template(types=_catalogue(random.Random(1)))]
    )
    result = schedule(inp)
    check_plan(inp, raws, result)
    assert "not modelled" not in result.exact
    assert result.optimal
    assert len(result.errors) == 2
    zones = [c.labels.get(ZONE) for c in result.node_claims for _ in c.pods]
    assert sorted(zones) == ["za", "zb"]
