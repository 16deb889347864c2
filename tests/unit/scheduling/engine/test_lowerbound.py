"""The lower bound from plain inputs: a cost no plan that places the same pods can beat."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from karpy.scheduling.engine.lowerbound import PlacedClass, lower_bound
from karpy.scheduling.engine.pools import Dims, PoolContext
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.pods import PodView
from tests.unit.scheduling.engine.builders import HOSTNAME, anti_affinity, pod, template

GI = 1024**3
DIMS = Dims(["cpu", "memory", "pods"])


def _type(name: str, cpu: int, memory_gi: int, price: float) -> InstanceType:
    return InstanceType(
        name=name,
        capacity={"cpu": cpu * 1000, "memory": memory_gi * GI, "pods": 110},
        offerings=[Offering(zone="test-zone-a", capacity_type="on-demand", price=price)],
    )


# the larger type is cheaper per CPU and per GiB
POOL = PoolContext(
    template(types=[_type("small", 2, 4, 1.0), _type("big", 4, 8, 1.5)]),
    index=0,
    dims=DIMS,
    daemons=[],
)


def _placed(p: PodView, n: int, *, on_new: bool = True) -> PlacedClass:
    return PlacedClass(p, DIMS.vec(p.requests), n, on_new)


def _bound(placed: list[PlacedClass], existing_free: Sequence[tuple[int, ...]] = ()) -> float:
    return lower_bound(placed, pools=[POOL], existing_free=existing_free, resources=3)


def test_a_plan_that_launches_nothing_is_bounded_by_zero() -> None:
    on_existing = _placed(pod("a", cpu="1", memory="1Gi"), 8, on_new=False)
    assert _bound([on_existing], [(8000, 16 * GI, 100)]) == 0.0


def test_the_fluid_bound_buys_the_cheapest_capacity_per_resource() -> None:
    # 8 CPUs: two 4-CPU nodes at 1.5 (3.0) beat four 2-CPU nodes at 1.0 (4.0)
    assert _bound([_placed(pod("a", cpu="1", memory="1Gi"), 8)]) == pytest.approx(3.0)


def test_free_room_on_existing_nodes_costs_nothing() -> None:
    # 4 of the 8 CPUs fit the existing node's free room; the rest needs one 4-CPU node
    placed = [_placed(pod("a", cpu="1", memory="1Gi"), 8)]
    assert _bound(placed, [(4000, 4 * GI, 100)]) == pytest.approx(1.5)


def test_pods_that_repel_each_other_need_a_node_each() -> None:
    # three 1-CPU pods with hostname anti-affinity to each other: three nodes, the cheapest 1.0
    repelling = pod(
        "a",
        cpu="1",
        memory="1Gi",
        labels={"app": "a"},
        affinity=anti_affinity(HOSTNAME, {"app": "a"}),
    )
    assert _bound([_placed(repelling, 3)]) == pytest.approx(3.0)
    alike = pod("b", cpu="1", memory="1Gi", labels={"app": "b"})
    assert _bound([_placed(alike, 3)]) == pytest.approx(1.5 * 3 / 4)
