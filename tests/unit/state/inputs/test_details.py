"""Scheduling details of the input builder: DRA pods left out with a reason, LimitRange
defaults in DaemonSet overhead."""

from __future__ import annotations

from typing import Any

from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.state.inputs import DRA_UNSUPPORTED, ClusterObjects, PodViews, build_input
from tests.kit import daemonset, pod, served

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


def _limit_range(namespace: str, name: str = "defaults", **item: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"limits": [{"type": "Pod", "max": {"cpu": "64"}}, {"type": "Container", **item}]},
    }


def test_daemonset_overhead_counts_limit_range_defaults() -> None:
    bare = served(daemonset("agent", "kube-system"), uid="u-agent")
    half = served(daemonset("half", "kube-system", requests={"cpu": "100m"}), uid="u-half")
    ranges = [
        _limit_range(
            "kube-system", defaultRequest={"cpu": "250m"}, default={"cpu": "1", "memory": "256Mi"}
        ),
        _limit_range("other", default={"cpu": "3"}),
    ]
    views = PodViews()

    def requests(ds: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> dict[str, int]:
        objects = ClusterObjects(pending=[], daemonsets=[ds], limit_ranges=limit_ranges)
        [daemon] = build_input(objects, views=views).input.daemonset_pods
        return dict(daemon.requests)

    before = requests(bare, [])
    # defaultRequest wins over default; default fills what defaultRequest leaves out
    got = requests(bare, ranges)
    assert got["cpu"] == before.get("cpu", 0) + 250
    assert got["memory"] == before.get("memory", 0) + 256 * 2**20
    # a request the container sets is kept; only the missing one is defaulted
    got = requests(half, ranges)
    assert got["cpu"] == 100 and got["memory"] == 256 * 2**20
    # the cached view follows the LimitRange going away
    assert requests(bare, []) == before


def test_admitted_pods_keep_their_requests_simulated_ones_get_the_defaults() -> None:
    p = served(pod("p", "ns", requests={"memory": "1Gi"}), uid="u-p")
    ranges = [_limit_range("ns", defaultRequest={"cpu": "500m"})]
    admitted = build_input(ClusterObjects(pending=[p], limit_ranges=ranges))
    assert "cpu" not in admitted.input.pods[0].requests
    made = build_input(ClusterObjects(pending=[p], limit_ranges=ranges, admitted=False))
    assert made.input.pods[0].requests["cpu"] == 500
    assert made.input.pods[0].requests["memory"] == 2**30


def test_a_limit_is_the_request_it_leaves_out() -> None:
    limited = pod(
        "p", "ns", spec={"containers": [{"name": "c", "resources": {"limits": {"cpu": "2"}}}]}
    )
    ranges = [_limit_range("ns", defaultRequest={"cpu": "500m"})]
    built = build_input(ClusterObjects(pending=[limited], limit_ranges=ranges, admitted=False))
    assert built.input.pods[0].requests["cpu"] == 2000
