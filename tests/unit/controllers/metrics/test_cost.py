"""`karpenter_nodepools_cost_total`: each NodePool's launched NodeClaims, at their offering's
price in the catalogue the provider returns (NodeOverlay prices included there)."""

from __future__ import annotations

from typing import Any

from karpy.controllers.metrics.cost import claim_price, cost_text, nodepool_costs
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirements


def _type(name: str, **prices: float) -> InstanceType:
    offerings = [
        Offering(zone="z1", capacity_type=ct.replace("_", "-"), price=p) for ct, p in prices.items()
    ]
    return InstanceType(
        name=name,
        requirements=Requirements(),
        offerings=offerings,
        capacity={"cpu": 2000, "memory": 4 * 1024**3, "pods": 110},
    )


def _claim(pool: str, instance_type: str | None, capacity_type: str = "on-demand") -> Any:
    labels = {"karpenter.sh/nodepool": pool, "karpenter.sh/capacity-type": capacity_type}
    if instance_type:
        labels |= {
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": "z1",
        }
    return {"metadata": {"name": f"{pool}-{instance_type}", "labels": labels}}


def test_costs_sum_each_pools_launched_claims() -> None:
    types = [_type("small", on_demand=0.1, spot=0.03), _type("large", on_demand=0.4)]
    claims = [
        _claim("a", "small"),
        _claim("a", "small", "spot"),
        _claim("a", "large"),
        _claim("a", None),  # not launched yet: no price
        _claim("b", "gone"),  # a type the catalogue no longer lists
        _claim("deleted-pool", "small"),
    ]
    costs = nodepool_costs(claims, {"a": types, "b": types, "empty": types})
    assert round(costs["a"], 6) == 0.53
    assert costs["b"] == 0.0
    assert costs["empty"] == 0.0
    assert "deleted-pool" not in costs


def test_an_overlaid_price_is_the_price() -> None:
    assert claim_price(_claim("a", "small"), [_type("small", on_demand=0.07)]) == 0.07


def test_status_cost_is_a_short_decimal_string() -> None:
    assert cost_text(0.0542951234) == "0.054295"
    assert cost_text(2.5) == "2.5"
    assert cost_text(0.0) == "0"
