"""The chart's container command with `provider: azure` (`rendered_command`), set up as the
upstream Azure chart's users set it: `settings.clusterName`/`clusterEndpoint`, the cluster's
Azure settings in `controller.env`, the workload-identity ServiceAccount annotation and pod
label. Run as the chart's ServiceAccount against the fake ARM, it makes the AKSNodeClass Ready
(its status), reads the kube-dns Service's ClusterIP for the nodes' DNS (the `-dns` Role),
launches a VM for a pending pod whose Node joins (the kwok simulator plays its kubelet),
consolidates it away once the pod goes, and logs not one Forbidden."""

from __future__ import annotations

from pathlib import Path

from kubetest import Kubectl

from tests.e2e.aws_kubelets import Kubelets
from tests.e2e.azure_cluster import (
    NODECLASS,
    NODEPOOL,
    custom_kube_dns,
    karpy_env,
    kubelet_flags,
    launched,
    running_on,
    seed,
    wait_consolidated_away,
)
from tests.e2e.azure_kubelets import AzureMachines
from tests.e2e.support import wait_for, wait_nodepool_ready, web_pod
from tests.integration.azure.fakearm import ThreadedFakeArm
from tests.integration.chart.chart_support import Helm
from tests.integration.chart.rendered_command import assert_stopped_cleanly, rendered_command

CHART_SETTINGS = {"PROVIDER", "CLUSTER_NAME", "CLUSTER_ENDPOINT"}
"""Set by the chart from `provider` and `settings`; the rest go in `controller.env`."""


def azure_values(arm: ThreadedFakeArm) -> dict[str, object]:
    env = karpy_env(arm)
    return {
        "provider": "azure",
        "settings": {
            "clusterName": env["CLUSTER_NAME"],
            "clusterEndpoint": env["CLUSTER_ENDPOINT"],
            "batchIdleDuration": "500ms",
        },
        "controller": {
            "env": [
                {"name": name, "value": value}
                for name, value in env.items()
                if name not in CHART_SETTINGS
            ]
        },
        "serviceAccount": {
            "annotations": {
                "azure.workload.identity/client-id": "00000000-0000-0000-0000-0000000000aa"
            }
        },
        "podLabels": {"azure.workload.identity/use": "true"},
    }


def test_rendered_command_launches_azure_vms_as_the_chart_service_account(
    cluster_helm: Helm,
    kubectl: Kubectl,
    kubeconfig: str,
    crds: None,
    clean_cluster: None,
    namespace: str,
    release_namespace: str,
    tmp_path: Path,
) -> None:
    with (
        ThreadedFakeArm() as arm,
        Kubelets(kubeconfig, machines=AzureMachines) as kubelets,
        custom_kube_dns(kubectl) as cluster_dns,
    ):
        seed(arm)
        values = cluster_helm.values_file(azure_values(arm), "azure.json")
        with rendered_command(
            cluster_helm, kubectl, kubeconfig, release_namespace, tmp_path, "-f", str(values)
        ) as running:
            kubectl.apply(NODECLASS)
            kubectl.apply(NODEPOOL)
            wait_nodepool_ready(kubectl, "default", timeout=120)
            kubectl.apply(web_pod(namespace))
            wait_for(
                lambda: launched(kubectl),
                timeout=120,
                message="a NodeClaim with an Azure providerID",
            )
            (vm,) = arm.state.of_kind("vm")
            assert vm["tags"]["karpenter.azure.com_cluster"] == "aks-e2e"
            assert kubelet_flags(vm)["--cluster-dns"] == cluster_dns
            wait_for(
                lambda: running_on(kubectl, namespace, vm["name"]),
                timeout=90,
                message="the pod bound to the VM's Node and Running",
            )
            kubectl("delete", "pod", "web", "-n", namespace, timeout=60)
            wait_consolidated_away(kubectl, arm)
        assert_stopped_cleanly(running)
    assert kubelets.errors == []
