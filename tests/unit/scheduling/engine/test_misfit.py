"""The first reason a NodePool cannot take a pod, in the scheduler's order, with its fix."""

from __future__ import annotations

from karpy.scheduling.engine.misfit import misfit
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.pods import PodView, pod_view
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.taints import Taint
from tests.kit import pod

GI = 2**30
ARCH = "kubernetes.io/arch"
ZONE = "topology.kubernetes.io/zone"


def _type(name: str, cpu: int, *, available: bool = True) -> InstanceType:
    return InstanceType(
        name=name,
        capacity={"cpu": cpu * 1000, "memory": cpu * 2 * GI, "pods": 110},
        offerings=[
            Offering(zone="a", capacity_type="on-demand", price=cpu * 0.1, available=available)
        ],
        requirements=Requirements([Requirement(ARCH, complement=False, values=("amd64",))]),
    )


def _pool(**kw: object) -> NodePoolTemplate:
    args: dict[str, object] = {
        "name": "amd",
        "requirements": Requirements([Requirement(ARCH, complement=False, values=("amd64",))]),
        "instance_types": [_type("small", 2), _type("big", 8)],
    }
    args.update(kw)
    return NodePoolTemplate(**args)  # type: ignore[arg-type]


def _pod(cpu: str = "1", spec: dict[str, object] | None = None) -> PodView:
    return pod_view(pod("p", "ns", requests={"cpu": cpu, "memory": "1Gi"}, spec=spec))


def test_a_pod_that_fits_has_no_misfit() -> None:
    assert misfit(_pod(), _pool()) is None


def test_architecture_requirement_names_the_key() -> None:
    got = misfit(_pod(spec={"nodeSelector": {ARCH: "arm64"}}), _pool())
    assert got is not None
    assert (got.reason, got.object) == ("requirement", f"Requirement/{ARCH}")


def test_untolerated_taint_comes_first() -> None:
    taint = Taint(key="team", value="x", effect="NoSchedule")
    got = misfit(_pod("100"), _pool(taints=(taint,)))
    assert got is not None
    assert (got.reason, got.object) == ("taint", "Taint/team=x:NoSchedule")


def test_too_large_names_the_largest_offering() -> None:
    got = misfit(_pod("100"), _pool())
    assert got is not None
    assert (got.reason, got.object) == ("resources", "InstanceType/big")
    assert "8" in got.fix


def test_limits_reached_names_the_nodepool() -> None:
    got = misfit(_pod(), _pool(limits={"cpu": 4000}), usage={"cpu": 4000})
    assert got is not None
    assert (got.reason, got.object) == ("limits", "NodePool/amd")


def test_volume_zone() -> None:
    view = pod_view(
        pod("p", "ns", requests={"cpu": "1"}),
        volume_terms=[Requirements([Requirement(ZONE, complement=False, values=("b",))])],
    )
    got = misfit(view, _pool())
    assert got is not None and got.reason == "volume-zone"


def test_offerings_under_an_ice_mark() -> None:
    types = [_type("small", 2, available=False), _type("big", 8, available=False)]
    got = misfit(_pod(), _pool(instance_types=types))
    assert got is not None
    assert (got.reason, got.object) == ("ice", "InstanceType/small")
