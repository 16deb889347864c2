"""Truncating a launch to 60 instance types keeps every requirement's minValues met: when the
60 cheapest types offer too few values, the cheapest type of each missing value is kept in
place of the dearest, and a launch that cannot meet minValues at all names the requirement."""

from __future__ import annotations

import pytest

from karpy.apis.aws.v1.labels import LABEL_INSTANCE_FAMILY
from karpy.apis.v1.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT
from karpy.cloudprovider.aws.fleet import MAX_INSTANCE_TYPES, MinValuesError, candidates, truncate
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements


def itype(family: str, size: int, price: float) -> InstanceType:
    return InstanceType(
        name=f"{family}.{size}xlarge",
        capacity={"cpu": 2000, "memory": 8 << 30, "pods": 29},
        offerings=[Offering(zone="us-east-1a", capacity_type="spot", price=price)],
        requirements=Requirements(
            [Requirement(LABEL_INSTANCE_FAMILY, complement=False, values=(family,))]
        ),
    )


def families(min_values: int | None, *names: str) -> Requirements:
    return Requirements(
        [Requirement(LABEL_INSTANCE_FAMILY, complement=False, values=names, min_values=min_values)]
    )


# 70 cheap c5 sizes, then one m5 and one r5 that cost more than every c5.
CATALOG = [
    *(itype("c5", i, 0.01 * (i + 1)) for i in range(70)),
    itype("m5", 1, 5.0),
    itype("r5", 1, 6.0),
]


def test_without_min_values_the_60_cheapest_are_kept() -> None:
    chosen = truncate(CATALOG, families(None, "c5", "m5", "r5"), CAPACITY_TYPE_SPOT)
    assert len(chosen) == MAX_INSTANCE_TYPES
    assert {it.name.split(".")[0] for it in chosen} == {"c5"}


def test_min_values_keep_the_cheapest_type_of_each_missing_value() -> None:
    chosen = truncate(CATALOG, families(3, "c5", "m5", "r5"), CAPACITY_TYPE_SPOT)
    names = [it.name for it in chosen]
    assert len(names) == MAX_INSTANCE_TYPES
    assert {n.split(".")[0] for n in names} == {"c5", "m5", "r5"}
    # Cheapest first still; the dearest c5 sizes made room.
    assert names[0] == "c5.0xlarge" and names[-2:] == ["m5.1xlarge", "r5.1xlarge"]
    assert "c5.57xlarge" in names and "c5.58xlarge" not in names


def test_min_values_met_by_the_cheapest_change_nothing() -> None:
    plain = truncate(CATALOG, families(None, "c5", "m5", "r5"), CAPACITY_TYPE_SPOT)
    met = truncate(CATALOG, families(1, "c5", "m5", "r5"), CAPACITY_TYPE_SPOT)
    assert [it.name for it in met] == [it.name for it in plain]


def test_min_values_the_types_cannot_meet_are_an_error_naming_the_requirement() -> None:
    with pytest.raises(MinValuesError, match=r'minValues of "karpenter.k8s.aws/instance-family"'):
        truncate(CATALOG, families(4, "c5", "m5", "r5", "x2"), CAPACITY_TYPE_SPOT)


def test_min_values_beyond_the_type_limit_are_an_error() -> None:
    many = [itype(f"f{i}", 1, 1.0 + i) for i in range(5)]
    reqs = families(5, *(f"f{i}" for i in range(5)))
    assert len(truncate(many, reqs, CAPACITY_TYPE_SPOT, limit=5)) == 5
    with pytest.raises(MinValuesError, match="offer 4"):
        truncate(many, reqs, CAPACITY_TYPE_SPOT, limit=4)


def test_candidates_carry_the_min_values_truncation() -> None:
    found = candidates(CATALOG, families(3, "c5", "m5", "r5"), {"cpu": 1000})
    assert found.capacity_type == CAPACITY_TYPE_SPOT
    assert {it.name.split(".")[0] for it in found.chosen} == {"c5", "m5", "r5"}
    assert CAPACITY_TYPE_ON_DEMAND not in {o.capacity_type for o in found.chosen[0].offerings}
