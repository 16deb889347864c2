"""Reading a catalogue: offerings that repeat a zone and capacity type are read once."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.scheduling import CatalogError, parse_catalog


def _offering(zone: Any, capacity_type: str = "spot", **extra: Any) -> dict[str, Any]:
    return {
        "Price": 0.5,
        "Requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity_type]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
        ],
        **extra,
    }


def _type(name: str, *offerings: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "resources": {"cpu": "1", "memory": "1Gi"}, "offerings": offerings}


def test_repeated_requirements_give_the_same_offerings() -> None:
    with_gpu = _offering("a")
    with_gpu["Requirements"].append({"key": "gpu", "operator": "In", "values": ["yes"]})
    types = parse_catalog(
        [
            _type("one", _offering("a"), _offering("b", "on-demand"), with_gpu),
            _type("two", _offering("a"), _offering("b", "on-demand"), with_gpu),
        ]
    )
    first, second = (
        [(o.zone, o.capacity_type, o.requirements) for o in t.offerings] for t in types
    )
    assert [(zone, capacity_type, len(reqs)) for zone, capacity_type, reqs in first] == [
        ("a", "spot", 2),
        ("b", "on-demand", 2),
        ("a", "spot", 3),
    ]
    assert first[2][2]["gpu"].values == {"yes"}
    assert first == second


def test_an_error_names_the_offering_even_when_an_earlier_one_was_fine() -> None:
    bad = _offering("a")
    bad["Requirements"][1]["values"] = ["a", "b"]
    with pytest.raises(CatalogError, match=r"catalog\[1\] \(two\)\.offerings\[1\]\.Requirements"):
        parse_catalog([_type("one", _offering("a")), _type("two", _offering("a"), bad)])
    with pytest.raises(CatalogError, match=r"catalog\[1\] \(two\)\.offerings\[0\]\.Price"):
        parse_catalog([_type("one", _offering("a")), _type("two", _offering("a", Price=-1))])


def test_requirements_of_other_shapes_are_read_as_before() -> None:
    odd = _offering("a")
    odd["Requirements"][1]["values"] = ("a",)  # a tuple, not a JSON list: read, not reused
    odd["Requirements"].append({"key": "x", "operator": "Exists", "minValues": 1})
    (t,) = parse_catalog([_type("one", odd, odd)])
    assert [o.zone for o in t.offerings] == ["a", "a"]
    (t,) = parse_catalog([_type("one", _offering(1))])  # a number is read as its text
    assert t.offerings[0].zone == "1"
