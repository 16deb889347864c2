"""The test kit's Karpenter objects are valid as the CRDs define them, with every option set."""

from __future__ import annotations

from karpy.apis.registry import validate_object
from tests.kit import LINUX_AMD64_ON_DEMAND, kwok_nodeclass, nodeclaim, nodepool


def test_kit_objects_pass_the_api_validation() -> None:
    taint = {"key": "a", "value": "b", "effect": "NoSchedule"}
    pool = nodepool(
        "p",
        requirements=LINUX_AMD64_ON_DEMAND,
        budgets=[{"nodes": "10%"}],
        taints=[taint],
        startup_taints=[{"key": "s", "effect": "NoSchedule"}],
        labels={"team": "x"},
        limits={"cpu": "100"},
        weight=10,
        expire_after="720h",
    )
    claim = nodeclaim(
        "c",
        requests={"cpu": "1", "memory": "1Gi"},
        startup_taints=[taint],
        annotations={"x": "y"},
    )
    for obj in (pool, nodepool(), claim, nodeclaim("d"), kwok_nodeclass(delay="5s")):
        assert validate_object(obj) is not None
    assert pool["spec"]["template"]["spec"]["requirements"][1]["key"] == "kubernetes.io/arch"
    assert claim["spec"]["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}}
