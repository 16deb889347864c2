"""End to end: a NodePool's limits stop provisioning (with an event) until they are raised."""

from __future__ import annotations

import json
import time

from kubetest import Kubectl

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.scheduling.resources import parse_resources
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import bound_pods, deployment, events, nodeclaims, wait_bound, wait_for

LOCAL_REQUIREMENTS = [
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
]


def _launched_cpu(kubectl: Kubectl) -> int:
    return sum(
        parse_resources((c.get("status") or {}).get("capacity") or {}).get("cpu", 0)
        for c in nodeclaims(kubectl)
    )


def test_cpu_limit_stops_provisioning_and_raising_it_resumes(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default", limits={"cpu": "4"})
    kubectl.apply(deployment("web", namespace, replicas=8, cpu="1", memory="1Gi"))

    def limit_event() -> bool:
        return any(
            e.get("source", {}).get("component") == "karpenter" and "limit" in e.get("message", "")
            for e in events(kubectl, namespace, reason="FailedScheduling")
        )

    wait_for(limit_event, timeout=120, message="a FailedScheduling event naming the limits")
    # Give karpy a few more batches: nothing beyond the limit may launch.
    time.sleep(15)
    assert _launched_cpu(kubectl) <= 4000
    assert len(bound_pods(kubectl, namespace)) < 8

    kubectl(
        "patch",
        "nodepool",
        "default",
        "--type=merge",
        "--patch",
        json.dumps({"spec": {"limits": {"cpu": "40"}}}),
    )
    wait_bound(kubectl, namespace, 8, timeout=180)
    assert _launched_cpu(kubectl) <= 40000


def test_small_demo_fits_a_hundred_cpu_limit_in_one_go(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    # manifests/examples/kwok: the catalogue lists types of up to 256 vCPU, so counting every
    # NodeClaim as its largest listed type refused the fifth 1-CPU pod of `make run`'s demo.
    kwok_pool("default", requirements=LOCAL_REQUIREMENTS, limits={"cpu": "100"})
    kubectl.apply(deployment("inflate", namespace, replicas=5, cpu="1", memory="1Gi"))
    wait_bound(kubectl, namespace, 5, timeout=120)
    refused = [
        e["message"]
        for e in events(kubectl, namespace, reason="FailedScheduling")
        if e.get("source", {}).get("component") == "karpenter" and "limit" in e["message"]
    ]
    assert refused == []
    capacity = {t.name: t.capacity.get("cpu", 0) for t in kwok_instance_types()}
    worst = 0
    for claim in nodeclaims(kubectl):
        for req in claim["spec"]["requirements"]:
            if req["key"] == "node.kubernetes.io/instance-type":
                worst += max(capacity[name] for name in req["values"])
    assert 0 < worst <= 100_000, "whatever the provider launches stays within the limit"
