"""NodeOverlays in the engine's inputs: a discount makes the scheduler choose the family, a
capacity overlay lets pods requesting the resource schedule, overlays of equal weight that touch
the same prices conflict (the one applied second is ignored and reported), weight orders them,
and the NodeClaims record that an overlay applied."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from karpy.apis.v1alpha1 import (
    ANNOTATION_CAPACITY_OVERLAY_APPLIED,
    ANNOTATION_PRICE_OVERLAY_APPLIED,
)
from karpy.cloudprovider.kwok.catalog import KWOK_LABEL_FAMILY, kwok_instance_types
from karpy.controllers.provisioning.nodeclaims import nodeclaim_for
from karpy.scheduling.engine import SchedulingResult, schedule
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.overlays import adjusted_price, overlays_of
from karpy.state.inputs import ClusterObjects, InputError, build_input
from karpy.state.inputs import overlay_templates as apply_overlays
from tests.kit import LINUX_AMD64_ON_DEMAND, nodeoverlay, nodepool, pod

JSON = dict[str, Any]
FUSE = "example.com/fuse"
_TYPES: list[InstanceType] = []


def _types() -> list[InstanceType]:
    if not _TYPES:
        _TYPES.extend(kwok_instance_types())
    return _TYPES


def _pool(name: str = "default") -> JSON:
    return nodepool(name, requirements=LINUX_AMD64_ON_DEMAND)


def _template(name: str = "default") -> NodePoolTemplate:
    return NodePoolTemplate.from_nodepool(_pool(name), _types())


def _family(name: str) -> JSON:
    return {"key": KWOK_LABEL_FAMILY, "operator": "In", "values": [name]}


def _pending(n: int, *, requests: dict[str, str] | None = None) -> list[JSON]:
    return [pod(f"p-{i}", requests=requests or {"cpu": "1", "memory": "1Gi"}) for i in range(n)]


def _plan(
    overlays: Sequence[JSON],
    pods: Sequence[JSON],
    templates: Sequence[NodePoolTemplate] | None = None,
) -> SchedulingResult:
    built = build_input(
        ClusterObjects(
            pending=pods,
            templates=list(templates) if templates is not None else [_template()],
            overlays=overlays,
        ),
        strict=True,
    )
    return schedule(built.input)


def _families(result: SchedulingResult) -> set[str]:
    """The families of every instance type any claim may launch."""
    return {t.name.split("-", 1)[0] for c in result.node_claims for t in c.instance_types}


def _chosen(result: SchedulingResult) -> set[str]:
    """The family of each claim's cheapest instance type (what is launched)."""
    out = set()
    for c in result.node_claims:
        best = min(c.instance_types, key=lambda t: t.price(c.requirements))
        out.add(best.name.split("-", 1)[0])
    return out


@pytest.mark.parametrize(
    ("price", "change", "expected"),
    [
        (1.0, None, 1.0),
        (1.0, "0.25", 0.25),
        (1.0, "+0.5", 1.5),
        (1.0, "-0.25", 0.75),
        (1.0, "-3", 0.0),
        (2.0, "+10%", 2.2),
        (2.0, "-15%", 1.7),
        (2.0, "-100%", 0.0),
    ],
)
def test_adjusted_price(price: float, change: str | None, expected: float) -> None:
    assert adjusted_price(price, change) == pytest.approx(expected)


def test_a_discount_on_one_family_makes_the_scheduler_choose_it() -> None:
    pods = _pending(3)
    assert _chosen(_plan([], pods)) == {"c"}  # c is the cheapest family per CPU
    discounted = _plan(
        [nodeoverlay("m-discount", requirements=[_family("m")], priceAdjustment="-50%")], pods
    )
    assert discounted.errors == {}
    assert _chosen(discounted) == {"m"}
    (claim,) = discounted.node_claims
    obj = nodeclaim_for(claim, _pool())
    assert obj["metadata"]["annotations"][ANNOTATION_PRICE_OVERLAY_APPLIED] == "true"
    assert ANNOTATION_CAPACITY_OVERLAY_APPLIED not in obj["metadata"]["annotations"]


def test_a_price_override_only_prices_matching_offerings() -> None:
    overlay = nodeoverlay(
        "spot-only",
        requirements=[
            _family("m"),
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        ],
        price="0.001",
    )
    (template,) = apply_overlays([_template()], overlays_of([overlay])[0]).templates
    m = next(t for t in template.instance_types if t.name == "m-2x-amd64-linux")
    spot = {o.price for o in m.offerings if o.capacity_type == "spot"}
    on_demand = {o.price for o in m.offerings if o.capacity_type == "on-demand"}
    assert spot == {0.001}
    assert min(on_demand) > 0.05
    assert m.price_overlaid and not m.capacity_overlaid
    # the pool is on-demand only: the spot discount does not move its plan
    assert _chosen(_plan([overlay], _pending(3))) == {"c"}


def test_a_capacity_overlay_lets_pods_requesting_the_resource_schedule() -> None:
    pods = _pending(2, requests={"cpu": "1", FUSE: "1"})
    without = _plan([], pods)
    assert set(without.errors) == {"default/p-0", "default/p-1"}
    overlay = nodeoverlay("fuse", requirements=[_family("s")], capacity={FUSE: "1"})
    result = _plan([overlay], pods)
    assert result.errors == {}
    assert _families(result) == {"s"}
    assert len(result.node_claims) == 2  # one device per node
    obj = nodeclaim_for(result.node_claims[0], _pool())
    assert obj["metadata"]["annotations"][ANNOTATION_CAPACITY_OVERLAY_APPLIED] == "true"


def test_an_overlay_can_select_one_nodepool() -> None:
    overlay = nodeoverlay(
        "only-b",
        requirements=[{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["b"]}],
        capacity={FUSE: "2"},
    )
    result = apply_overlays([_template("a"), _template("b")], overlays_of([overlay])[0])
    a, b = result.templates
    assert all(FUSE not in t.capacity for t in a.instance_types)
    assert all(t.capacity[FUSE] == 2 for t in b.instance_types)
    assert result.applied == {"only-b": ["b"]}


def test_equal_weights_on_the_same_prices_conflict_and_the_second_is_ignored() -> None:
    # Karpenter's order: higher weight first, then the name later in the alphabet
    first = nodeoverlay("zz-cheap-m", requirements=[_family("m")], priceAdjustment="-50%", weight=5)
    second = nodeoverlay("aa-dear-m", requirements=[_family("m")], priceAdjustment="+50%", weight=5)
    readable, invalid = overlays_of([second, first])
    assert invalid == {}
    assert [o.name for o in readable] == ["zz-cheap-m", "aa-dear-m"]
    result = apply_overlays([_template()], readable)
    assert result.conflicts == {"aa-dear-m": "conflict with another overlay"}
    assert result.applied == {"zz-cheap-m": ["default"]}
    assert _chosen(_plan([second, first], _pending(3))) == {"m"}
    # equal weights on different families do not conflict
    other = nodeoverlay("aa-dear-s", requirements=[_family("s")], priceAdjustment="+50%", weight=5)
    assert apply_overlays([_template()], overlays_of([first, other])[0]).conflicts == {}


def test_a_conflicting_overlay_is_ignored_as_a_whole() -> None:
    # "wide" touches c and m; m's prices are already set at its weight, so none of c's change
    narrow = nodeoverlay("zz-m", requirements=[_family("m")], priceAdjustment="-10%", weight=3)
    wide = nodeoverlay(
        "aa-wide",
        requirements=[{"key": KWOK_LABEL_FAMILY, "operator": "In", "values": ["c", "m"]}],
        priceAdjustment="-90%",
        weight=3,
    )
    result = apply_overlays([_template()], overlays_of([narrow, wide])[0])
    assert set(result.conflicts) == {"aa-wide"}
    c = next(t for t in result.templates[0].instance_types if t.name == "c-2x-amd64-linux")
    assert not c.price_overlaid


def test_a_higher_weight_wins_and_a_lower_one_does_not_conflict() -> None:
    high = nodeoverlay("high", requirements=[_family("m")], price="0.001", weight=10)
    low = nodeoverlay("low", requirements=[_family("m")], price="9", weight=1)
    fuse_high = nodeoverlay(
        "fuse-high", requirements=[_family("m")], capacity={FUSE: "4"}, weight=10
    )
    fuse_low = nodeoverlay("fuse-low", requirements=[_family("m")], capacity={FUSE: "1"}, weight=1)
    result = apply_overlays([_template()], overlays_of([low, high, fuse_low, fuse_high])[0])
    assert result.conflicts == {}
    m = next(t for t in result.templates[0].instance_types if t.name == "m-2x-amd64-linux")
    assert {o.price for o in m.offerings} == {0.001}
    assert m.capacity[FUSE] == 4
    # capacity of equal weight on the same resource conflicts
    again = nodeoverlay("a-fuse", requirements=[_family("m")], capacity={FUSE: "2"}, weight=10)
    conflicted = apply_overlays([_template()], overlays_of([fuse_high, again])[0])
    assert set(conflicted.conflicts) == {"a-fuse"}


def test_an_unreadable_overlay_is_left_out_or_refused_when_strict() -> None:
    bad = nodeoverlay("bad", requirements=[_family("m")], capacity={FUSE: "lots"})
    readable, invalid = overlays_of([bad])
    assert readable == [] and "spec.capacity" in invalid["bad"]
    with pytest.raises(InputError, match="NodeOverlay bad"):
        _plan([bad], _pending(1))
    lenient = build_input(
        ClusterObjects(pending=_pending(1), templates=[_template()], overlays=[bad])
    )
    assert lenient.overlays is not None and lenient.overlays.applied == {}
