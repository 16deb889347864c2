"""End to end: a pod's volumes decide the zone of the node karpy launches for it.

kube-scheduler binds a pod only where its volumes can be reached, so a node launched in another
zone leaves it Pending. The control plane runs no volume controllers or provisioners: the tests
bind claims themselves, the way the PersistentVolume controller and an external provisioner
would (`volumeName` plus the `bind-completed` annotation, a PersistentVolume whose `claimRef`
names the claim).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubetest import Kubectl

from tests import kit
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import bound_pods, nodeclaims, wait_for

ZONE = "topology.kubernetes.io/zone"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
CSI_DRIVER = "e2e.karpy.example"
JSON = dict[str, Any]


@pytest.fixture
def suffix() -> str:
    return uuid.uuid4().hex[:6]


@pytest.fixture
def cluster_volumes(kubectl: Kubectl) -> Iterator[list[str]]:
    """Names (`kind/name`) of cluster-scoped volume objects to remove after the test; their
    protection finalizers are dropped first (no controller here removes them)."""
    created: list[str] = []
    yield created
    for ref in created:
        kubectl(
            "patch", ref, "--type=merge", "--patch", '{"metadata":{"finalizers":null}}', check=False
        )
        kubectl("delete", ref, "--ignore-not-found", "--wait=false", check=False)


def _pod(name: str, namespace: str, claim: str) -> JSON:
    return kit.pod(
        name,
        namespace,
        requests={"cpu": "1", "memory": "1Gi"},
        claims={"data": claim},
        grace=0,
    )


def _claim(name: str, namespace: str, *, storage_class: str, volume: str | None = None) -> JSON:
    """A claim; one bound to `volume` says so as the PersistentVolume controller would."""
    return kit.pvc(
        name,
        namespace,
        storage_class=storage_class,
        volume=volume,
        annotations={BIND_COMPLETED: "yes"} if volume else None,
    )


def _volume(name: str, *, zone: str, claim: JSON, storage_class: str) -> JSON:
    return kit.pv(name, storage_class=storage_class, csi_driver=CSI_DRIVER, zone=zone, claim=claim)


def _zone_of_node(kubectl: Kubectl, name: str) -> str:
    node: JSON = kubectl.json("get", "node", name)
    return str(node["metadata"]["labels"].get(ZONE, ""))


def _wait_pod_bound(kubectl: Kubectl, namespace: str, name: str) -> JSON:
    def check() -> JSON | None:
        return next(
            (p for p in bound_pods(kubectl, namespace) if p["metadata"]["name"] == name), None
        )

    pod: JSON = wait_for(check, timeout=180, message=f"pod {namespace}/{name} bound")
    return pod


def _claim_zones(kubectl: Kubectl) -> set[str]:
    """The zones karpy's NodeClaims were launched in."""
    return {str(c["metadata"].get("labels", {}).get(ZONE, "")) for c in nodeclaims(kubectl)}


def test_pod_with_a_volume_in_zone_b_gets_a_node_in_zone_b(
    kubectl: Kubectl,
    namespace: str,
    karpy: KarpyProcess,
    kwok_pool: PoolFactory,
    suffix: str,
    cluster_volumes: list[str],
) -> None:
    kwok_pool("default")
    pv_name = f"pv-zone-b-{suffix}"
    claim = _claim("data-db-0", namespace, storage_class="", volume=pv_name)
    kubectl.apply(claim)
    claim = kubectl.json("get", "pvc", "data-db-0", f"--namespace={namespace}")
    kubectl.apply(_volume(pv_name, zone="test-zone-b", claim=claim, storage_class=""))
    cluster_volumes.append(f"pv/{pv_name}")

    kubectl.apply(_pod("db-0", namespace, "data-db-0"))
    pod = _wait_pod_bound(kubectl, namespace, "db-0")

    assert _zone_of_node(kubectl, pod["spec"]["nodeName"]) == "test-zone-b"
    assert _claim_zones(kubectl) == {"test-zone-b"}


def test_wait_for_first_consumer_class_in_one_zone_gets_a_node_there(
    kubectl: Kubectl,
    namespace: str,
    karpy: KarpyProcess,
    kwok_pool: PoolFactory,
    suffix: str,
    cluster_volumes: list[str],
) -> None:
    kwok_pool("default")
    sc_name = f"zonal-c-{suffix}"
    kubectl.apply(kit.storage_class(sc_name, zones=["test-zone-c"], provisioner=CSI_DRIVER))
    cluster_volumes.append(f"storageclass/{sc_name}")
    kubectl.apply(_claim("data-db-0", namespace, storage_class=sc_name))
    kubectl.apply(_pod("db-0", namespace, "data-db-0"))

    # kube-scheduler picks a node for the unbound claim (only one in the class's zone fits)...
    def selected() -> JSON | None:
        pvc: JSON = kubectl.json("get", "pvc", "data-db-0", f"--namespace={namespace}")
        return pvc if pvc["metadata"].get("annotations", {}).get(SELECTED_NODE) else None

    claim = wait_for(selected, timeout=180, message="the claim's selected node")
    node_name = claim["metadata"]["annotations"][SELECTED_NODE]
    assert _zone_of_node(kubectl, node_name) == "test-zone-c"
    assert _claim_zones(kubectl) == {"test-zone-c"}

    # ...and, playing the provisioner, a volume there lets the pod bind to it.
    pv_name = f"pv-zone-c-{suffix}"
    kubectl.apply(_volume(pv_name, zone="test-zone-c", claim=claim, storage_class=sc_name))
    cluster_volumes.append(f"pv/{pv_name}")
    kubectl(
        "patch",
        "pvc",
        "data-db-0",
        f"--namespace={namespace}",
        "--type=merge",
        "--patch",
        json.dumps(
            {
                "metadata": {"annotations": {BIND_COMPLETED: "yes"}},
                "spec": {"volumeName": pv_name},
            }
        ),
    )
    pod = _wait_pod_bound(kubectl, namespace, "db-0")
    assert pod["spec"]["nodeName"] == node_name
