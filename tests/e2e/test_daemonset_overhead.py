"""End to end: DaemonSet overhead and host ports, as Karpenter accounts for them.

- Host ports are grouped per instance type: DaemonSet A (hostPort 8000) runs on amd64 nodes and
  DaemonSet B (hostPort 9000) on arm64 ones, both only on the NodePool's nodes
  (`testing/karpenter-node=true`). A pod needing port 8000 that requires arm64, and one needing
  port 9000 that requires amd64, each get a node of the other architecture's DaemonSet: no
  conflict, both Running.
- A LimitRange's `default` or `defaultRequest` gives a DaemonSet without requests its overhead
  (Karpenter's "should account for LimitRange Default/DefaultRequest on daemonSet pods"): the
  one node launched holds both the pod and the DaemonSet's pod.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubetest import Kubectl

from tests import kit
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import deployment, pods, pool_nodes, wait_for
from tests.kit import LINUX

pytestmark = pytest.mark.timeout(400)
JSON = dict[str, Any]
POOL = "ports"
ARCH = "kubernetes.io/arch"
NODE_LABEL = "testing/karpenter-node"


def _arch(arch: str) -> JSON:
    term = {"matchExpressions": [{"key": ARCH, "operator": "In", "values": [arch]}]}
    required = {"nodeSelectorTerms": [term]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def _container(port: int) -> JSON:
    return {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        "ports": [{"containerPort": port, "hostPort": port}],
    }


def _daemonset(name: str, namespace: str, *, port: int, arch: str) -> JSON:
    ds = kit.daemonset(name, namespace)
    spec = ds["spec"]["template"]["spec"]
    spec.update(
        nodeSelector={NODE_LABEL: "true"},
        affinity=_arch(arch),
        containers=[_container(port)],
        tolerations=[],
    )
    return ds


def _pod(name: str, namespace: str, *, port: int, arch: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "host-port"}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "affinity": _arch(arch),
            "containers": [_container(port)],
        },
    }


def test_each_host_port_pod_runs_on_the_architecture_whose_daemonset_leaves_its_port_free(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool(POOL, requirements=LINUX, labels={NODE_LABEL: "true"})
    kubectl.apply(_daemonset("port-8000-amd64", namespace, port=8000, arch="amd64"))
    kubectl.apply(_daemonset("port-9000-arm64", namespace, port=9000, arch="arm64"))
    kubectl.apply(_pod("needs-8000-on-arm64", namespace, port=8000, arch="arm64"))
    kubectl.apply(_pod("needs-9000-on-amd64", namespace, port=9000, arch="amd64"))

    def running() -> dict[str, str] | None:
        found = {
            p["metadata"]["name"]: p["spec"].get("nodeName", "")
            for p in pods(kubectl, namespace, "app=host-port")
            if (p.get("status") or {}).get("phase") == "Running"
        }
        return found if len(found) == 2 else None

    placed: dict[str, str] = wait_for(running, timeout=120, message="both host-port pods Running")
    arch = {
        n["metadata"]["name"]: n["metadata"]["labels"].get(ARCH)
        for n in kubectl.json("get", "nodes")["items"]
    }
    assert arch[placed["needs-8000-on-arm64"]] == "arm64", placed
    assert arch[placed["needs-9000-on-amd64"]] == "amd64", placed
    assert not karpy.log_lines("host ports conflict")


@pytest.mark.parametrize("field", ["default", "defaultRequest"])
def test_limit_range_defaults_count_in_daemonset_overhead(
    field: str, kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool(POOL)
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "defaults", "namespace": namespace},
            "spec": {"limits": [{"type": "Container", field: {"cpu": "2", "memory": "1Gi"}}]},
        }
    )
    agent = kit.daemonset("agent", namespace)
    agent["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"memory": "1Gi"}}
    kubectl.apply(agent)
    app = deployment("large-app", namespace, replicas=1)
    app["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"memory": "4"}}
    kubectl.apply(app)

    def together() -> tuple[str, str] | None:
        running = {
            p["metadata"]["labels"].get("app"): p["spec"].get("nodeName", "")
            for p in pods(kubectl, namespace)
            if (p.get("status") or {}).get("phase") == "Running"
        }
        launched = pool_nodes(kubectl, POOL)
        if len(launched) != 1 or {"agent", "large-app"} - running.keys():
            return None
        return running["agent"], running["large-app"]

    on = wait_for(together, timeout=120, message="the pod and the DaemonSet pod Running")
    node = pool_nodes(kubectl, POOL)[0]["metadata"]["name"]
    assert on == (node, node)
