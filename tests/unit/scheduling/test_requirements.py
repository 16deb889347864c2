"""The requirement algebra: operators, intersection laws, compatibility."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpy.scheduling.requirements import Requirement, RequirementError, Requirements

UNIVERSE = ["a", "b", "c", "0", "1", "2", "5", "9", "10", "-3"]
ZONE = "topology.kubernetes.io/zone"


def req(op: str, *values: str, key: str = "k") -> Requirement:
    return Requirement.new(key, op, values)


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]))
    if op in ("Gt", "Lt", "Gte", "Lte"):
        return req(op, str(draw(st.integers(min_value=-4, max_value=12))))
    if op in ("In", "NotIn"):
        return req(op, *draw(st.lists(st.sampled_from(UNIVERSE), min_size=1, max_size=4)))
    return req(op)


def test_operators_round_trip() -> None:
    assert req("In", "a", "b").operator == "In"
    assert req("NotIn", "a").operator == "NotIn"
    assert req("Exists").operator == "Exists"
    assert req("DoesNotExist").operator == "DoesNotExist"
    assert req("Gt", "3").to_dict() == {"key": "k", "operator": "Gt", "values": ["3"]}
    assert req("Lt", "3").to_dict() == {"key": "k", "operator": "Lt", "values": ["3"]}
    assert req("Gt", str(2**63 - 1)).operator == "DoesNotExist"


def test_bounds_select_integers_only() -> None:
    gt = req("Gt", "3")
    assert gt.has("4") and not gt.has("3") and not gt.has("a")
    assert req("Gte", "3").has("3")
    assert req("Lte", "3").has("3") and not req("Lt", "3").has("3")


def test_bad_operators_are_refused() -> None:
    with pytest.raises(RequirementError):
        req("Gt", "x")
    with pytest.raises(RequirementError):
        req("Sometimes", "x")


def test_deprecated_keys_are_normalised() -> None:
    r = Requirement.new("failure-domain.beta.kubernetes.io/zone", "In", ["z1"])
    assert r.key == ZONE
    reqs = Requirements([r, Requirement.new(ZONE, "In", ["z1", "z2"])])
    assert list(reqs) == [ZONE]
    assert reqs[ZONE].values == frozenset({"z1"})


def test_min_values_take_the_maximum() -> None:
    a = Requirement.new("k", "In", ["a", "b", "c"], min_values=2)
    b = Requirement.new("k", "Exists", min_values=3)
    assert a.intersection(b).min_values == 3


@given(requirements(), requirements())
def test_intersection_is_the_set_intersection(a: Requirement, b: Requirement) -> None:
    both = a.intersection(b)
    for v in UNIVERSE:
        assert both.has(v) == (a.has(v) and b.has(v))


@given(requirements(), requirements())
def test_intersection_commutes(a: Requirement, b: Requirement) -> None:
    ab, ba = a.intersection(b), b.intersection(a)
    assert all(ab.has(v) == ba.has(v) for v in UNIVERSE)
    assert ab.allows_absent() == ba.allows_absent()


@given(requirements(), requirements(), requirements())
def test_intersection_associates(a: Requirement, b: Requirement, c: Requirement) -> None:
    left = a.intersection(b).intersection(c)
    right = a.intersection(b.intersection(c))
    assert all(left.has(v) == right.has(v) for v in UNIVERSE)


@given(requirements())
def test_intersection_is_idempotent(a: Requirement) -> None:
    aa = a.intersection(a)
    assert all(aa.has(v) == a.has(v) for v in UNIVERSE)


@given(requirements(), requirements())
def test_intersects_means_a_common_value_or_both_allow_absence(
    a: Requirement, b: Requirement
) -> None:
    common = any(a.has(v) and b.has(v) for v in UNIVERSE)
    if common or (a.allows_absent() and b.allows_absent()):
        assert a.intersects(b)
    if a.intersects(b) and not (a.allows_absent() and b.allows_absent()):
        # some value satisfies both (possibly outside the small test universe)
        assert a.intersection(b).has_any()


def test_compatible_allows_undefined_well_known_labels() -> None:
    template = Requirements([req("In", "on-demand", key="karpenter.sh/capacity-type")])
    pod = Requirements([req("In", "z1", key=ZONE)])
    assert template.compatible(pod) is None
    custom = Requirements([req("In", "x", key="team")])
    assert "team" in (template.compatible(custom) or "")
    assert template.compatible(Requirements([req("NotIn", "x", key="team")])) is None
    assert template.compatible(Requirements([req("DoesNotExist", key="team")])) is None
    assert template.strict_compatible(pod) is not None


def test_intersects_names_the_conflicting_key() -> None:
    a = Requirements([req("In", "z1", key=ZONE)])
    b = Requirements([req("In", "z2", key=ZONE)])
    why = a.intersects(b)
    assert why is not None and ZONE in why
    assert a.intersects(Requirements([req("NotIn", "z2", key=ZONE)])) is None


def test_requirements_hash_and_labels() -> None:
    a = Requirements([req("In", "x", key="a"), req("In", "y", "z", key="b")])
    b = Requirements([req("In", "y", "z", key="b"), req("In", "x", key="a")])
    assert a == b and hash(a) == hash(b)
    assert a.labels() == {"a": "x"}
    assert a.union(Requirements([req("In", "y", key="b")])).labels() == {"a": "x", "b": "y"}


def test_intersects_a_large_set_with_a_single_value_either_way() -> None:
    many = req("In", *(f"t{i}" for i in range(2000)))
    assert many.intersects(req("In", "t1999")) and req("In", "t1999").intersects(many)
    assert not many.intersects(req("In", "x")) and not req("In", "x").intersects(many)
    assert not many.intersects(req("DoesNotExist")) and not req("DoesNotExist").intersects(many)
