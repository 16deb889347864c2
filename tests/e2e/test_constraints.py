"""End to end: scheduling constraints are honoured by what karpy launches."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubetest import Kubectl

from karpy.scheduling.resources import parse_resources
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import bound_pods, deployment, nodeclaims, nodes, pods, wait_bound, wait_for

ZONE = "topology.kubernetes.io/zone"
FAMILY = "karpenter.kwok.sh/instance-family"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
HOSTNAME = "kubernetes.io/hostname"
SPOT_TAINT = {"key": "example.com/spot", "value": "true", "effect": "NoSchedule"}


def _node_of(pod: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return by_name[pod["spec"]["nodeName"]]


def test_constraints_are_honoured(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default")
    kwok_pool(
        "spot",
        requirements=[
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
        ],
        taints=[SPOT_TAINT],
    )
    workloads = [
        deployment("family", namespace, replicas=3, cpu="500m", node_selector={FAMILY: "m"}),
        deployment(
            "spot",
            namespace,
            replicas=3,
            cpu="500m",
            node_selector={CAPACITY_TYPE: "spot"},
            tolerations=[{"key": "example.com/spot", "operator": "Exists"}],
        ),
        deployment(
            "spread",
            namespace,
            replicas=8,
            cpu="250m",
            memory="256Mi",
            spread=[
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "spread"}},
                }
            ],
        ),
        deployment(
            "apart",
            namespace,
            replicas=4,
            cpu="250m",
            memory="256Mi",
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": HOSTNAME,
                            "labelSelector": {"matchLabels": {"app": "apart"}},
                        }
                    ]
                }
            },
        ),
    ]
    for workload in workloads:
        kubectl.apply(workload)

    wait_bound(kubectl, namespace, 18, timeout=240)
    by_name = {n["metadata"]["name"]: n for n in nodes(kubectl)}

    def labels_of(app: str, key: str) -> list[str]:
        return [
            _node_of(p, by_name)["metadata"]["labels"].get(key, "")
            for p in bound_pods(kubectl, namespace, f"app={app}")
        ]

    assert set(labels_of("family", FAMILY)) == {"m"}, "nodeSelector on the instance family"
    assert set(labels_of("spot", CAPACITY_TYPE)) == {"spot"}, "spot requirement"
    spot_nodes = {p["spec"]["nodeName"] for p in bound_pods(kubectl, namespace, "app=spot")}
    for name in spot_nodes:
        node = by_name[name]
        assert node["metadata"]["labels"]["karpenter.sh/nodepool"] == "spot"
        assert any(t.get("key") == SPOT_TAINT["key"] for t in node["spec"].get("taints", []))
    zones = Counter(labels_of("spread", ZONE))
    assert len(zones) == 4 and max(zones.values()) - min(zones.values()) <= 1, zones
    apart = labels_of("apart", HOSTNAME)
    assert len(set(apart)) == 4, f"hostname anti-affinity put pods together: {apart}"
    # Pods that did not ask for the tainted spot pool stayed off it.
    for app in ("family", "spread", "apart"):
        for pod in bound_pods(kubectl, namespace, f"app={app}"):
            assert (
                _node_of(pod, by_name)["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
            )


def test_daemonset_overhead_is_accounted_for(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    """Each 1.5-CPU pod alone fits a 2-CPU node (1.9 allocatable), but not next to the
    DaemonSet's 500m: karpy must size nodes for both, so every DaemonSet pod is bound too."""
    kubectl.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {
                        "terminationGracePeriodSeconds": 0,
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [
                            {
                                "name": "agent",
                                "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}},
                            }
                        ],
                    },
                },
            },
        }
    )
    kwok_pool("default")
    kubectl.apply(
        deployment(
            "work",
            namespace,
            replicas=3,
            cpu="1500m",
            memory="512Mi",
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "work"}}}
                    ]
                }
            },
        )
    )
    wait_bound(kubectl, namespace, 3, selector="app=work", timeout=180)
    launched = nodes(kubectl)
    assert len(launched) == 3

    def daemons_bound() -> bool:
        agents = pods(kubectl, namespace, "app=agent")
        bound = [p for p in agents if p["spec"].get("nodeName")]
        return len(agents) == len(launched) and len(bound) == len(launched)

    wait_for(daemons_bound, timeout=120, message="a bound DaemonSet pod on every node")
    for claim in nodeclaims(kubectl):
        requests = parse_resources(claim["spec"]["resources"]["requests"])
        assert requests["cpu"] >= 2000, f"DaemonSet overhead missing from {requests}"
