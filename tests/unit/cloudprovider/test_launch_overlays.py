"""`LaunchOverlays`: the NodeOverlays a provider launches with, shared by kwok and AWS."""

from __future__ import annotations

from typing import Any

from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.overlays import LaunchOverlays
from karpy.scheduling.instancetypes import InstanceType, Offering

TYPES = [
    InstanceType(
        name=name,
        capacity={"cpu": 2000, "pods": 29},
        offerings=[Offering(zone="z1", capacity_type="on-demand", price=price)],
    )
    for name, price in (("c5.large", 0.1), ("m5.large", 0.2))
]


def claim(pool: str = "default") -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": f"{pool}-x", "labels": {"karpenter.sh/nodepool": pool}},
            "spec": {
                "requirements": [],
                "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "K", "name": "d"},
            },
        }
    )


def overlay(name: str, version: str = "1", verdict: str | None = None, **spec: Any) -> Any:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "resourceVersion": version},
        "spec": {
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["m5.large"],
                }
            ],
            **spec,
        },
    }
    if verdict is not None:
        obj["status"] = {"conditions": [{"type": "ValidationSucceeded", "status": verdict}]}
    return obj


def prices(types: Any) -> dict[str, float]:
    return {t.name: t.offerings[0].price for t in types}


def test_without_a_source_or_overlays_the_types_are_returned_as_is() -> None:
    assert LaunchOverlays(None).apply(claim(), TYPES) is TYPES
    assert LaunchOverlays(lambda: []).apply(claim(), TYPES) is TYPES


def test_overlays_price_the_types_and_rejected_ones_are_left_out() -> None:
    objs = [overlay("half", priceAdjustment="-50%")]
    launch = LaunchOverlays(lambda: objs)
    overlaid = launch.apply(claim(), TYPES)
    assert prices(overlaid) == {"c5.large": 0.1, "m5.large": 0.1}
    assert [t.price_overlaid for t in overlaid] == [False, True]
    # the same inputs give the same list (callers cache candidates by list identity)
    assert launch.apply(claim(), TYPES) is overlaid
    objs[:] = [overlay("half", version="2", verdict="False", priceAdjustment="-50%")]
    assert launch.apply(claim(), TYPES) is TYPES
    objs[:] = [overlay("half", version="3", verdict="True", price="0.05")]
    assert prices(launch.apply(claim(), TYPES))["m5.large"] == 0.05
