"""Scheduling details of the input builder: DRA pods left out with a reason."""

from __future__ import annotations

from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.state.inputs import DRA_UNSUPPORTED, ClusterObjects, build_input
from tests.kit import pod, served

DRA_CLAIM = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}


def test_pods_claiming_dra_devices_are_left_out_with_a_reason() -> None:
    dra = served(pod("dra", spec=DRA_CLAIM), uid="u-dra")
    plain = served(pod("plain"), uid="u-plain")
    objects = ClusterObjects(pending=[dra, plain], templates=[NodePoolTemplate(name="pool")])
    for strict in (False, True):
        built = build_input(objects, strict=strict)
        assert [p.key for p in built.input.pods] == ["default/plain"]
        assert built.errors == {"default/dra": DRA_UNSUPPORTED}
        assert "DRA" in DRA_UNSUPPORTED and "not supported yet" in DRA_UNSUPPORTED
        # the plan's errors (what `karpy simulate` lists and the provisioner's events say)
        assert built.explain({}) == {"default/dra": DRA_UNSUPPORTED}
