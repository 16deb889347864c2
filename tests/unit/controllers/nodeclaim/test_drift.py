"""The Drifted reasons on constructed objects: NodePool hash (only between equal hash versions),
requirements, instance type or offering gone, and the kwok NodeClass hash."""

from __future__ import annotations

from typing import Any

from karpy.cloudprovider.kwok.drift import nodeclass_hash
from karpy.controllers.nodeclaim.disruption.drift import (
    instance_type_missing,
    nodepool_drifted,
    requirements_drifted,
)
from karpy.controllers.nodepool.hash import nodepool_hash
from karpy.scheduling.instancetypes import InstanceType, Offering
from tests.kit import kwok_nodeclass, nodepool, schedulingconfig

JSON = dict[str, Any]
HASH = "karpenter.sh/nodepool-hash"
VERSION = "karpenter.sh/nodepool-hash-version"


def _stamped(obj: JSON, hash_: str | None, version: str | None) -> JSON:
    notes = {k: v for k, v in ((HASH, hash_), (VERSION, version)) if v is not None}
    return {**obj, "metadata": {**obj["metadata"], "annotations": notes}}


def _claim(labels: dict[str, str]) -> JSON:
    return {"metadata": {"name": "c", "labels": labels}}


def test_nodepool_hash_drift_only_between_equal_versions() -> None:
    pool = nodepool("pool")
    now = nodepool_hash(pool)
    claim = _claim({})
    assert nodepool_drifted(_stamped(pool, now, "v3"), _stamped(claim, "2", "v3"))
    assert not nodepool_drifted(_stamped(pool, now, "v3"), _stamped(claim, now, "v3"))
    assert not nodepool_drifted(_stamped(pool, now, "v3"), _stamped(claim, "2", "v2"))
    assert not nodepool_drifted(_stamped(pool, now, "v3"), _stamped(claim, "2", None))
    assert not nodepool_drifted(_stamped(pool, now, None), _stamped(claim, "2", "v3"))
    # An older version both sides: the stamped values are compared as they are.
    assert nodepool_drifted(_stamped(pool, "1", "v2"), _stamped(claim, "2", "v2"))
    assert not nodepool_drifted(_stamped(pool, "1", "v2"), _stamped(claim, "1", "v2"))


def test_a_claim_stamped_from_the_edited_spec_is_not_drifted_before_the_pool_is_restamped() -> None:
    edited = nodepool("pool", labels={"team": "blue"})
    stale_annotation = _stamped(edited, nodepool_hash(nodepool("pool")), "v3")
    fresh_claim = _stamped(_claim({}), nodepool_hash(edited), "v3")
    old_claim = _stamped(_claim({}), nodepool_hash(nodepool("pool")), "v3")
    assert not nodepool_drifted(stale_annotation, fresh_claim)
    assert nodepool_drifted(stale_annotation, old_claim)


def test_requirements_drift_when_labels_no_longer_satisfy_the_pool() -> None:
    pool = nodepool(
        "pool",
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        ],
    )
    ok = {"karpenter.sh/capacity-type": "on-demand", "kubernetes.io/arch": "amd64", "x": "y"}
    assert not requirements_drifted(pool, _claim(ok))
    assert requirements_drifted(pool, _claim({**ok, "karpenter.sh/capacity-type": "spot"}))
    assert requirements_drifted(pool, _claim({"karpenter.sh/capacity-type": "on-demand"}))
    not_in = nodepool("pool", requirements=[{"key": "team", "operator": "NotIn", "values": ["a"]}])
    assert not requirements_drifted(not_in, _claim({}))
    assert requirements_drifted(not_in, _claim({"team": "a"}))


def test_requirements_drift_under_a_tightened_scheduling_config() -> None:
    """A SchedulingConfig's requirements count as the NodePool's for the pools of its
    NodeClass (karpy's extension): tightening the guard rail drifts the nodes it rules out."""
    pool = nodepool("pool")  # linux only, on the KWOKNodeClass `default`
    spot_arm = _claim({"kubernetes.io/os": "linux", "karpenter.sh/capacity-type": "spot"})
    assert not requirements_drifted(pool, spot_arm)
    assert requirements_drifted(pool, spot_arm, [schedulingconfig()])  # amd64, on-demand
    elsewhere = schedulingconfig(nodeclass="other")
    assert not requirements_drifted(pool, spot_arm, [elsewhere])
    on_demand = _claim(
        {
            "kubernetes.io/os": "linux",
            "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/arch": "amd64",
        }
    )
    assert not requirements_drifted(pool, on_demand, [schedulingconfig(), elsewhere])


def test_instance_type_or_offering_gone() -> None:
    types = [
        InstanceType(
            name="m",
            capacity={"cpu": 1000},
            offerings=[Offering(zone="z1", capacity_type="on-demand", price=1.0)],
        )
    ]
    base = {"node.kubernetes.io/instance-type": "m", "topology.kubernetes.io/zone": "z1"}
    assert not instance_type_missing(
        types, _claim({**base, "karpenter.sh/capacity-type": "on-demand"})
    )
    assert not instance_type_missing(
        types, _claim({**base, "karpenter.sh/capacity-type": "reserved"})
    )
    assert instance_type_missing(types, _claim({**base, "karpenter.sh/capacity-type": "spot"}))
    assert instance_type_missing(
        types,
        _claim(
            {**base, "topology.kubernetes.io/zone": "z2", "karpenter.sh/capacity-type": "on-demand"}
        ),
    )
    assert instance_type_missing(
        types, _claim({**base, "node.kubernetes.io/instance-type": "gone"})
    )


def test_kwok_nodeclass_hash_follows_the_spec_only() -> None:
    a = kwok_nodeclass("a")
    b = kwok_nodeclass("b")
    assert nodeclass_hash(a) == nodeclass_hash(b)  # names and metadata do not count
    slow = kwok_nodeclass("a", delay="5s")
    assert nodeclass_hash(slow) != nodeclass_hash(a)
    reordered = {**slow, "spec": {"maxPods": None, **slow["spec"]}}
    assert nodeclass_hash(reordered) == nodeclass_hash(slow)
