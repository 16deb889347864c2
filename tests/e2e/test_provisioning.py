"""End to end: pending pods become NodeClaims, Nodes and running pods (real `karpy run`,
kwok provider, the session control plane)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from kubetest import Kubectl

from karpy.scheduling.resources import parse_resources
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess, cloudprovider_calls
from tests.e2e.support import (
    bound_pods,
    deployment,
    nodeclaims,
    nodes,
    wait_bound,
    wait_for,
)

SIZES = (
    ("tiny", "250m", "256Mi"),
    ("small", "500m", "1Gi"),
    ("medium", "1", "2Gi"),
    ("large", "2", "6Gi"),
)


def _capacity_total(items: list[dict[str, Any]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for node in items:
        for name, amount in parse_resources(node["status"]["capacity"]).items():
            total[name] += amount
    return dict(total)


def test_scale_from_zero_to_200_pods_of_mixed_sizes(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default")
    for name, cpu, memory in SIZES:
        kubectl.apply(deployment(name, namespace, replicas=0, cpu=cpu, memory=memory))
    for name, _, _ in SIZES:
        kubectl("scale", f"deployment/{name}", "--replicas=50", f"--namespace={namespace}")

    bound = wait_bound(kubectl, namespace, 200, timeout=240)
    assert len(bound) == 200

    launched = nodes(kubectl)
    names = {n["metadata"]["name"] for n in launched}
    assert {p["spec"]["nodeName"] for p in bound} <= names
    assert all(n["metadata"]["labels"]["karpenter.sh/nodepool"] == "default" for n in launched)

    claims = nodeclaims(kubectl)
    assert len(claims) == len(launched)
    samples = karpy.metrics()
    assert cloudprovider_calls(samples, "create", "success") == len(claims)
    assert cloudprovider_calls(samples, "create") == len(claims)

    # status.resources (counted every few seconds) matches what was launched.
    expected = _capacity_total(launched)

    def resources_match() -> bool:
        pool = kubectl.json("get", "nodepool", "default")
        status = pool.get("status") or {}
        got = parse_resources(status.get("resources") or {})
        return (
            got.get("cpu") == expected["cpu"]
            and got.get("memory") == expected["memory"]
            and got.get("nodes") == len(launched)
            and status.get("nodes") == len(launched)
        )

    wait_for(resources_match, timeout=60, message="NodePool status.resources to match")
    assert len(bound_pods(kubectl, namespace)) == 200


def test_instance_types_from_a_catalogue_file(
    kubectl: Kubectl,
    namespace: str,
    karpy_factory: Any,
    kwok_pool: PoolFactory,
    tmp_path: Any,
) -> None:
    offerings = [
        {
            "Price": 0.05,
            "Available": True,
            "Requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["lab-1"]},
            ],
        }
    ]
    catalogue = [
        {
            "name": "lab-2x",
            "resources": {"cpu": "2", "memory": "4Gi", "pods": "10"},
            "architecture": "amd64",
            "operatingSystems": ["linux"],
            "offerings": offerings,
        }
    ]
    path = tmp_path / "types.json"
    path.write_text(json.dumps(catalogue))
    karpy_factory({"INSTANCE_TYPES_FILE_PATH": str(path)})
    kwok_pool("default")
    kubectl.apply(deployment("lab", namespace, replicas=2, cpu="1500m", memory="1Gi"))
    wait_bound(kubectl, namespace, 2, timeout=120)
    launched = nodes(kubectl)
    assert len(launched) == 2
    for node in launched:
        labels = node["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == "lab-2x"
        assert labels["topology.kubernetes.io/zone"] == "lab-1"
