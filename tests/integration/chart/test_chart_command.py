"""The chart's container command, proven (`rendered_command`): installed from a Karpenter
user's values file (with an older Karpenter's `drift` gate) and `provider: kwok`, it provisions
pending pods and removes the nodes once they are deleted. Any Forbidden in its log fails the
test, so the ClusterRole and Roles grant all that karpy uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubetest import Kubectl, wait_until

from tests.e2e.support import deployment, kwok_nodeclass, nodepool, wait_bound
from tests.integration.chart.chart_support import Helm
from tests.integration.chart.rendered_command import assert_stopped_cleanly, rendered_command
from tests.integration.chart.test_chart_karpenter_values import DRIFT_VALUES, KARPENTER_VALUES

JSON = dict[str, Any]


def karpy_nodes(kubectl: Kubectl) -> list[JSON]:
    items: list[JSON] = kubectl.json("get", "nodes", "-l", "karpenter.sh/nodepool=chart")["items"]
    return items


def test_rendered_command_provisions_as_the_chart_service_account(
    cluster_helm: Helm,
    kubectl: Kubectl,
    kubeconfig: str,
    crds: None,
    clean_cluster: None,
    namespace: str,
    release_namespace: str,
    tmp_path: Path,
) -> None:
    with rendered_command(
        cluster_helm,
        kubectl,
        kubeconfig,
        release_namespace,
        tmp_path,
        # a Karpenter user's values file, with a gate of an older Karpenter (drift) in it
        "-f",
        str(KARPENTER_VALUES),
        "-f",
        str(DRIFT_VALUES),
        "--set",
        "provider=kwok",
        "--set",
        "settings.batchIdleDuration=500ms",
    ) as running:
        assert "settings.featureGates.drift is not a feature gate of karpy" in (
            running.installed.stdout
        )
        kubectl.apply(
            [kwok_nodeclass("chart"), nodepool("chart", nodeclass="chart", consolidate_after="0s")]
        )
        kubectl.apply(deployment("inflate", namespace, replicas=3, cpu="1", memory="1Gi"))
        bound = wait_bound(kubectl, namespace, 3, timeout=120)
        nodes = karpy_nodes(kubectl)
        assert nodes and {p["spec"]["nodeName"] for p in bound} <= {
            n["metadata"]["name"] for n in nodes
        }
        # karpy is the kwok nodes' kubelet: Ready reported (nodes/status) and Leases renewed
        name = nodes[0]["metadata"]["name"]
        wait_until(
            lambda: kubectl.json("get", "lease", name, "-n", "kube-node-lease"),
            timeout=30,
            message=f"the Lease of node {name}",
        )
        ready = {
            c["type"]: c["status"]
            for c in kubectl.json("get", "node", name)["status"].get("conditions", [])
        }
        assert ready.get("Ready") == "True", ready

        kubectl("delete", "deployment", "inflate", "-n", namespace)
        wait_until(
            lambda: not karpy_nodes(kubectl) and not kubectl.json("get", "nodeclaims")["items"],
            timeout=120,
            message="the empty nodes and their NodeClaims to be removed",
        )
    assert_stopped_cleanly(running)
