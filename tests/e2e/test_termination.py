"""End to end: termination with a real `karpy run` (kwok provider) on the session control plane.

- Deleting a NodeClaim drains its node through the Eviction API while a PodDisruptionBudget
  (maxUnavailable 1) lets one pod go at a time; the pods move to new capacity, the instance is
  terminated and no finalizer is left behind.
- A launch whose Node never registers (the test-only fault plan `never-register=1`) is deleted
  after the registration timeout, shortened through `REGISTRATION_TIMEOUT`, and the pod gets a
  node that does register.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubetest import Kubectl

from karpy.cloudprovider.faults import ENV_VAR, PHANTOM_PREFIX
from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.karpy_process import KarpyProcess, cloudprovider_calls
from tests.e2e.support import (
    bound_pods,
    condition,
    deployment,
    events,
    nodeclaims,
    nodes,
    pdb,
    pod_ready,
    pods,
    ready_samples,
    wait_bound,
    wait_for,
    wait_pdb,
)

pytestmark = pytest.mark.timeout(420)
JSON = dict[str, Any]


def test_deleting_a_nodeclaim_drains_its_node_one_pod_at_a_time_under_a_pdb(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default")
    kubectl.apply(deployment("web", namespace, replicas=3, cpu="500m", memory="512Mi"))
    kubectl.apply(pdb("web", namespace, app="web"))
    wait_bound(kubectl, namespace, 3, selector="app=web")
    wait_pdb(kubectl, namespace, "web", healthy=3, allowed=1, timeout=60)
    # The node holding most of the pods, and its NodeClaim.
    by_node: dict[str, int] = {}
    for p in bound_pods(kubectl, namespace, "app=web"):
        by_node[p["spec"]["nodeName"]] = by_node.get(p["spec"]["nodeName"], 0) + 1
    victim_node = max(by_node, key=lambda n: by_node[n])
    assert by_node[victim_node] >= 2, f"pods spread out: {by_node}"
    provider_id = kubectl.json("get", "node", victim_node)["spec"]["providerID"]
    victim = next(c for c in nodeclaims(kubectl) if c["status"].get("providerID") == provider_id)
    victim_name = victim["metadata"]["name"]

    with ready_samples(kubectl, namespace, "app=web") as samples:
        kubectl("delete", "nodeclaim", victim_name, "--wait=false")

        def finished() -> bool:
            claims = {c["metadata"]["name"] for c in nodeclaims(kubectl)}
            names = {n["metadata"]["name"] for n in nodes(kubectl, None)}
            moved = [
                p
                for p in pods(kubectl, namespace, "app=web")
                if pod_ready(p) and p["spec"].get("nodeName") != victim_node
            ]
            return victim_name not in claims and victim_node not in names and len(moved) == 3

        wait_for(finished, timeout=240, message="drain, replacement capacity and finalization")

    assert samples and min(samples) >= 2, f"more than one pod unavailable at once: {samples}"
    refusals = [
        e
        for e in events(kubectl, "default", reason="FailedDraining")
        if e["involvedObject"]["name"] == victim_node and "violates a PDB" in e["message"]
    ]
    assert refusals, "the PDB never refused an eviction"
    evicted = events(kubectl, namespace, reason="Evicted")
    assert len({e["involvedObject"]["name"] for e in evicted}) >= by_node[victim_node]
    # The instance is terminated and no object is left waiting on a finalizer.
    assert cloudprovider_calls(karpy.metrics(), "delete") >= 1
    for claim in nodeclaims(kubectl):
        assert not claim["metadata"].get("deletionTimestamp"), claim["metadata"]["name"]
    for node in nodes(kubectl, None):
        assert not node["metadata"].get("deletionTimestamp"), node["metadata"]["name"]
    assert karpy.log_lines("deleted node") and karpy.log_lines("deleted nodeclaim")


def test_a_node_that_never_registers_is_replaced_after_the_registration_timeout(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    karpy = karpy_factory({"REGISTRATION_TIMEOUT": "20s", ENV_VAR: "never-register=1"})
    kwok_pool("default")
    kubectl.apply(deployment("lonely", namespace, replicas=1, cpu="500m", memory="512Mi"))

    def phantom() -> JSON | None:
        for claim in nodeclaims(kubectl):
            if str((claim.get("status") or {}).get("providerID", "")).startswith(PHANTOM_PREFIX):
                return claim
        return None

    stuck: JSON = wait_for(phantom, timeout=60, message="a launch that never registers")
    stuck_name = stuck["metadata"]["name"]
    launched_at = time.monotonic()

    def gone() -> bool:
        return stuck_name not in {c["metadata"]["name"] for c in nodeclaims(kubectl)}

    wait_for(gone, timeout=120, message="the unregistered NodeClaim to be deleted")
    assert time.monotonic() - launched_at >= 10, "deleted long before the registration timeout"
    bound = wait_bound(kubectl, namespace, 1, timeout=120)
    node = kubectl.json("get", "node", bound[0]["spec"]["nodeName"])
    assert not node["spec"]["providerID"].startswith(PHANTOM_PREFIX)
    registered = [
        c for c in nodeclaims(kubectl) if (condition(c, "Registered") or {}).get("status") == "True"
    ]
    assert len(registered) == 1
    assert karpy.log_lines("injected fault")
