"""End to end: kwok nodes on a control plane that watches their kubelets.

The session control plane runs the node lifecycle and taint-eviction controllers with the test
timing of `controlplane.TEST_NODE_MONITOR` (NotReady after 30 s without a Lease renewal). The
kwok simulator must behave like the kubelets it stands in for:

- with a real `karpy run`, kwok nodes stay Ready and untainted and their pods stay where they
  are for several grace periods, because each node's Lease is renewed every 10 s;
- they follow Karpenter's kwok provider conventions (labels, the NodeClaim owner reference, the
  registration delay, kwok's stage label and delete-delay annotation);
- with karpy in process and one node's kubelet stopped (the simulator's fault seam), that node
  becomes NotReady, is tainted unreachable, its pods are evicted and karpy provisions a new node
  for them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from controlplane import TEST_NODE_MONITOR
from kubetest import Kubectl, wait_until

from karpy.apis.objects import parse_time
from tests.e2e.conftest import PoolFactory
from tests.e2e.inprocess import InProcessKarpy
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import (
    bound_pods,
    condition,
    deployment,
    nodeclaims,
    nodes,
    pods,
    scale,
    wait_bound,
    wait_for,
)

pytestmark = pytest.mark.timeout(420)
JSON = dict[str, Any]
GRACE = TEST_NODE_MONITOR.grace_period
NODE_TAINTS = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
SPREAD = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def _lease(kubectl: Kubectl, node: str) -> JSON:
    lease: JSON = kubectl.json("get", "lease", node, "--namespace=kube-node-lease")
    return lease


def _ready(node: JSON) -> str | None:
    ready = condition(node, "Ready")
    return None if ready is None else str(ready.get("status"))


def _node_taints(node: JSON) -> set[str]:
    return {t["key"] for t in node["spec"].get("taints") or () if t["key"] in NODE_TAINTS}


def test_kwok_nodes_stay_ready_and_keep_their_pods(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default")
    kubectl.apply(deployment("web", namespace, replicas=2, cpu="1", affinity=SPREAD))
    placed = {
        p["metadata"]["uid"]: p["spec"]["nodeName"] for p in wait_bound(kubectl, namespace, 2)
    }
    assert len(set(placed.values())) == 2

    # The simulator writes a new node's first Lease on its next 1 s tick, which can come after
    # kube-scheduler has bound pods there.
    for name in set(placed.values()):
        wait_until(lambda n=name: _lease(kubectl, n), timeout=15, message=f"the Lease of {name}")
    renewals: dict[str, set[str]] = {name: set() for name in placed.values()}
    deadline = time.monotonic() + 3 * GRACE + 5
    while time.monotonic() < deadline:
        for node in nodes(kubectl):
            name = node["metadata"]["name"]
            assert _ready(node) == "True", f"{name} is {_ready(node)}"
            assert not _node_taints(node), f"{name} is tainted {_node_taints(node)}"
            renewals[name].add(_lease(kubectl, name)["spec"]["renewTime"])
        now = {p["metadata"]["uid"]: p["spec"]["nodeName"] for p in bound_pods(kubectl, namespace)}
        assert now == placed, "pods stay bound where they were"
        time.sleep(5)
    for name, seen in renewals.items():
        # 10 s renewals over 95 s, sampled every 5 s or so.
        assert len(seen) >= 6, f"{name}: {len(seen)} distinct renewals"


def test_kwok_nodes_follow_karpenters_kwok_conventions(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default", delay="5s")
    web = deployment(
        "web",
        namespace,
        replicas=1,
        cpu="1",
        labels={"kwok.x-k8s.io/stage": "unhealthy"},
        annotations={"pod-delete.stage.kwok.x-k8s.io/delay": "6s"},
    )
    web["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30
    kubectl.apply(web)
    pod = wait_bound(kubectl, namespace, 1)[0]
    node = kubectl.json("get", "node", pod["spec"]["nodeName"])
    name = node["metadata"]["name"]
    (claim,) = [c for c in nodeclaims(kubectl) if c["status"].get("nodeName") == name]

    # The registration delay: the Node appears 5 s after the launch.
    launched = parse_time((condition(claim, "Launched") or {}).get("lastTransitionTime"))
    created = parse_time(node["metadata"]["creationTimestamp"])
    assert launched is not None and created is not None
    assert (created - launched).total_seconds() >= 4

    # Karpenter's kwok labels: the size is the vCPU count, cpu and memory as quantities.
    labels = node["metadata"]["labels"]
    instance_type = labels["node.kubernetes.io/instance-type"]
    capacity = node["status"]["capacity"]
    assert labels["karpenter.kwok.sh/instance-size"] == capacity["cpu"]
    assert labels["karpenter.kwok.sh/instance-cpu"] == capacity["cpu"]
    assert labels["karpenter.kwok.sh/instance-memory"] == capacity["memory"]
    assert labels["karpenter.kwok.sh/instance-family"] == instance_type.split("-")[0]
    assert capacity["memory"].endswith("Gi") and capacity["cpu"].isdigit()

    # The Node is owned by its NodeClaim; its Lease by the Node, held by the node.
    assert node["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "name": claim["metadata"]["name"],
            "uid": claim["metadata"]["uid"],
            "blockOwnerDeletion": True,
        }
    ]
    lease = wait_for(lambda: _lease(kubectl, name), timeout=30, message="the node's Lease")
    assert lease["spec"]["holderIdentity"] == name
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
    ]

    # kwok's unhealthy stage: the pod runs but never becomes Ready.
    def running() -> JSON | None:
        found = pods(kubectl, namespace, "app=web")
        return found[0] if found and found[0]["status"].get("phase") == "Running" else None

    wait_for(running, timeout=30, message="the unhealthy pod running")
    for _ in range(4):
        current = pods(kubectl, namespace, "app=web")[0]
        assert (condition(current, "Ready") or {}).get("status") == "False"
        time.sleep(1)

    # kwok's delete delay: the pod stays Terminating for 6 s after its deletion.
    scale(kubectl, namespace, "web", 0)
    started = time.monotonic()
    time.sleep(3)
    left = pods(kubectl, namespace, "app=web")
    assert left and left[0]["metadata"].get("deletionTimestamp"), "still terminating after 3 s"
    wait_until(
        lambda: not pods(kubectl, namespace, "app=web"),
        timeout=30,
        interval=0.25,
        message="the pod's deletion finished",
    )
    assert time.monotonic() - started >= 4.5


def test_a_node_whose_kubelet_stops_is_evicted_and_replaced(
    kubectl: Kubectl, namespace: str, kubeconfig: str, kwok_pool: PoolFactory, crds: None
) -> None:
    kwok_pool("default", ready=False)
    tolerate_briefly = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}
        for key in NODE_TAINTS
    ]
    web = deployment("web", namespace, replicas=2, cpu="1", affinity=SPREAD)
    web["spec"]["template"]["spec"]["tolerations"] = tolerate_briefly
    with InProcessKarpy(kubeconfig) as karpy:
        kubectl.apply(web)
        placed = {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in wait_bound(kubectl, namespace, 2, timeout=120)
        }
        victim_pod, dead = sorted(placed.items())[0]
        (survivor,) = set(placed.values()) - {dead}
        karpy.kubelets_down.add(dead)
        stopped = time.monotonic()

        def unreachable() -> JSON | None:
            node: JSON = kubectl.json("get", "node", dead)
            return node if "node.kubernetes.io/unreachable" in _node_taints(node) else None

        node = wait_for(unreachable, timeout=2 * GRACE + 30, message=f"{dead} tainted unreachable")
        assert _ready(node) == "Unknown"
        assert time.monotonic() - stopped >= GRACE - 5, "not before the grace period"

        def evicted() -> bool:
            found = {p["metadata"]["name"]: p for p in pods(kubectl, namespace, "app=web")}
            victim = found.get(victim_pod)
            return victim is None or bool(victim["metadata"].get("deletionTimestamp"))

        wait_for(evicted, timeout=60, message=f"{victim_pod} evicted from {dead}")

        def replaced() -> set[str] | None:
            running = {
                p["spec"]["nodeName"]
                for p in bound_pods(kubectl, namespace, "app=web")
                if p["status"].get("phase") == "Running"
            }
            return running if len(running - {dead, survivor}) == 1 else None

        wait_for(replaced, timeout=120, message="the evicted pod running on a new node")
        healthy = kubectl.json("get", "node", survivor)
        assert _ready(healthy) == "True" and not _node_taints(healthy)
        assert len(nodes(kubectl)) == 3
