"""NodeOverlays give the same plan to the provisioner (informer cache, NodeOverlay gate on) and
to `karpy simulate` (scenario file): the same instance types at the same adjusted prices. Each
case also checks the outcome it is about, so overlays ignored on both paths would fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from karpy.cloudprovider.kwok.catalog import KWOK_LABEL_FAMILY
from karpy.scheduling.engine import SchedulingResult
from tests.kit import nodeoverlay
from tests.kit.parity import provisioned, simulated
from tests.unit.state.inputs.test_builder_parity import (
    JSON,
    NAMESPACE,
    NODECLASS,
    NS,
    nodepool,
    pod,
)

Launch = tuple[str, float, tuple[str, ...]]
"""(cheapest instance type, its price, pods) of one planned NodeClaim."""


def launches(result: SchedulingResult) -> list[Launch]:
    out = []
    for claim in result.node_claims:
        assert claim.offering is not None
        best = min(claim.instance_types, key=lambda t: (t.price(claim.requirements), t.name))
        out.append(
            (best.name, round(claim.offering.price, 6), tuple(sorted(p.key for p in claim.pods)))
        )
    return sorted(out)


def _family(name: str) -> JSON:
    return {"key": KWOK_LABEL_FAMILY, "operator": "In", "values": [name]}


BASE = [nodepool(), NODECLASS, NAMESPACE, *(pod(f"web-{i}") for i in range(3))]


@pytest.mark.parametrize(
    ("overlays", "family"),
    [
        ([], "c"),
        ([nodeoverlay("m-half", requirements=[_family("m")], priceAdjustment="-50%")], "m"),
        ([nodeoverlay("s-cheap", requirements=[_family("s")], price="0.01")], "s"),
        (
            [
                nodeoverlay("zz-m", requirements=[_family("m")], priceAdjustment="-50%", weight=2),
                nodeoverlay("aa-m", requirements=[_family("m")], priceAdjustment="+80%", weight=2),
            ],
            "m",
        ),
    ],
    ids=["none", "discount", "price", "conflict"],
)
async def test_provisioner_and_simulate_price_alike(
    overlays: list[JSON], family: str, tmp_path: Path
) -> None:
    objects = [*BASE, *overlays]
    live = await provisioned(objects, node_overlays=True)
    assert not live.errors
    on_cluster = launches(live)
    assert on_cluster == launches(simulated(objects, tmp_path).result)
    assert {name.split("-", 1)[0] for name, _, _ in on_cluster} == {family}
    assert sorted(p for _, _, pods in on_cluster for p in pods) == [
        f"{NS}/web-{i}" for i in range(3)
    ]
