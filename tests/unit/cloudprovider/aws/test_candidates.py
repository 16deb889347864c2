"""A launch burst computes each claim shape's candidate types once, off the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence

import pytest

from karpy.apis.v1.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT
from karpy.cloudprovider.aws.candidates import CandidateCache
from karpy.cloudprovider.aws.fleet import Candidates, candidates
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements


def itype(name: str, cpu: int, spot: float | None, od: float) -> InstanceType:
    offerings = [Offering(zone="us-east-1a", capacity_type=CAPACITY_TYPE_ON_DEMAND, price=od)]
    if spot is not None:
        offerings.append(Offering(zone="us-east-1a", capacity_type=CAPACITY_TYPE_SPOT, price=spot))
    return InstanceType(name=name, capacity={"cpu": cpu, "pods": 29}, offerings=offerings)


TYPES = [
    itype("small", 1000, None, 0.01),
    itype("medium", 2000, 0.03, 0.05),
    itype("large", 4000, 0.02, 0.10),
    itype("other", 4000, 0.001, 0.001),
]


def reqs(*names: str) -> Requirements:
    return Requirements(
        [
            Requirement.new("node.kubernetes.io/instance-type", "In", names),
            Requirement.new("karpenter.sh/capacity-type", "In", ["spot", "on-demand"]),
        ]
    )


def test_candidates_fit_the_requirements_and_requests_cheapest_first() -> None:
    found = candidates(TYPES, reqs("small", "medium", "large"), {"cpu": 1500})
    assert found.compatible == 2
    assert found.capacity_type == CAPACITY_TYPE_SPOT
    assert [it.name for it in found.chosen] == ["large", "medium"]
    only_od = candidates(TYPES, reqs("small"), {"cpu": 500})
    assert (only_od.capacity_type, [it.name for it in only_od.chosen]) == (
        CAPACITY_TYPE_ON_DEMAND,
        ["small"],
    )
    none = candidates(TYPES, reqs("small"), {"cpu": 9000})
    assert (none.compatible, none.capacity_type, none.chosen) == (0, None, ())


async def test_a_burst_of_one_shape_computes_once_in_a_worker_thread() -> None:
    calls: list[str] = []

    def compute(
        types: Sequence[InstanceType], r: Requirements, requests: Mapping[str, int]
    ) -> Candidates:
        calls.append(threading.current_thread().name)
        assert isinstance(types, tuple)  # an immutable snapshot crosses the thread
        return candidates(types, r, requests)

    cache = CandidateCache(compute)
    shape = reqs("small", "medium", "large")
    burst = await asyncio.gather(*(cache.get(TYPES, shape, {"cpu": 1500}) for _ in range(50)))
    assert len(calls) == 1 and calls[0] != threading.current_thread().name
    assert all(found is burst[0] for found in burst)
    assert [it.name for it in burst[0].chosen] == ["large", "medium"]

    await cache.get(TYPES, reqs("small", "medium", "large"), {"cpu": 1500})  # equal, not same
    assert len(calls) == 1
    await cache.get(TYPES, shape, {"cpu": 500})
    assert len(calls) == 2
    await cache.get(list(TYPES), shape, {"cpu": 500})  # a new catalogue (ICE cache changed)
    assert len(calls) == 3


async def test_old_shapes_are_dropped_and_failures_are_not_kept() -> None:
    failing = {"on": True}

    def compute(
        types: Sequence[InstanceType], r: Requirements, requests: Mapping[str, int]
    ) -> Candidates:
        if failing["on"]:
            raise RuntimeError("boom")
        return candidates(types, r, requests)

    cache = CandidateCache(compute, max_entries=2)
    with pytest.raises(RuntimeError, match="boom"):
        await cache.get(TYPES, reqs("small"), {})
    failing["on"] = False
    assert (await cache.get(TYPES, reqs("small"), {})).compatible == 1
    await cache.get(TYPES, reqs("medium"), {})
    await cache.get(TYPES, reqs("large"), {})
    assert len(cache._entries) == 2
