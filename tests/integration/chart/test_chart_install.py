"""Karpenter's documented install, upgrade and uninstall, run as written with karpy's chart
against the session's control plane (in a namespace of the test's choosing)."""

from __future__ import annotations

from typing import Any

from kubetest import Kubectl, wait_until

from tests.integration.chart.chart_support import CHART, Helm

JSON = dict[str, Any]


def env_of(deployment: JSON) -> dict[str, str]:
    ctr = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in ctr["env"]}


def can(kubectl: Kubectl, user: str, *args: str) -> bool:
    proc = kubectl("auth", "can-i", f"--as={user}", *args, check=False)
    return proc.stdout.strip() == "yes"


def test_documented_install_upgrade_and_uninstall(
    cluster_helm: Helm, kubectl: Kubectl, crds: None, clean_cluster: None, release_namespace: str
) -> None:
    ns = release_namespace
    # https://karpenter.sh/docs/getting-started/ : helm upgrade --install as written
    cluster_helm(
        "install",
        "karpenter",
        str(CHART),
        "--namespace",
        ns,
        "--create-namespace",
        "--set",
        "settings.clusterName=test-cluster",
        "--set",
        "settings.interruptionQueue=test-cluster",
        "--set",
        "controller.resources.requests.cpu=1",
        "--set",
        "controller.resources.requests.memory=1Gi",
        "--set",
        "controller.resources.limits.cpu=1",
        "--set",
        "controller.resources.limits.memory=1Gi",
    )
    deployment = kubectl.json("get", "deployment", "karpenter", "-n", ns)
    env = env_of(deployment)
    assert env["CLUSTER_NAME"] == "test-cluster"
    assert env["INTERRUPTION_QUEUE"] == "test-cluster"
    assert env["BATCH_IDLE_DURATION"] == "1s"
    ctr = deployment["spec"]["template"]["spec"]["containers"][0]
    assert ctr["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    # the Deployment controller made its pods (no kubelet here runs them)
    wait_until(
        lambda: kubectl(
            "get", "pods", "-n", ns, "-l", "app.kubernetes.io/name=karpenter", "-o", "name"
        ).stdout.split(),
        timeout=30,
        message="the Deployment's pods",
    )
    kubectl("describe", "sa", "karpenter", "-n", ns)

    # the ServiceAccount's rights (aws): the leader Lease in the release namespace only
    sa = f"system:serviceaccount:{ns}:karpenter"
    assert can(kubectl, sa, "list", "nodeclaims.karpenter.sh")
    assert can(kubectl, sa, "create", "pods", "--subresource=eviction", "-n", "default")
    assert can(kubectl, sa, "update", "leases/karpenter-leader-election", "-n", ns)
    assert not can(kubectl, sa, "update", "leases/karpenter-leader-election", "-n", "kube-system")
    assert not can(kubectl, sa, "update", "leases/someone-else", "-n", ns)
    # Leases are listed everywhere (the start-up check for another controller's leader Lease),
    # never written outside the release namespace
    assert can(kubectl, sa, "list", "leases", "-n", "kube-system")
    assert not can(kubectl, sa, "patch", "leases", "-n", "kube-system")
    assert not can(kubectl, sa, "create", "leases", "-n", "kube-node-lease")
    assert not can(kubectl, sa, "create", "nodes")
    assert not can(kubectl, sa, "patch", "nodes", "--subresource=status")
    assert not can(kubectl, sa, "list", "secrets", "-n", ns)
    # the kube-dns Service, for nodes' cluster DNS default, and no other Service
    assert can(kubectl, sa, "get", "services/kube-dns", "-n", "kube-system")
    assert not can(kubectl, sa, "get", "services/other", "-n", "kube-system")
    assert not can(kubectl, sa, "delete", "nodepools.karpenter.sh")
    # SchedulingConfigs (karpy's extension): read them, write their status, never edit them
    assert can(kubectl, sa, "watch", "schedulingconfigs.karpenter.sh")
    assert can(kubectl, sa, "patch", "schedulingconfigs.karpenter.sh", "--subresource=status")
    assert not can(kubectl, sa, "patch", "schedulingconfigs.karpenter.sh")
    assert not can(kubectl, sa, "delete", "schedulingconfigs.karpenter.sh")
    # NodeOverlays: the same (their status says whether they apply)
    assert can(kubectl, sa, "watch", "nodeoverlays.karpenter.sh")
    assert can(kubectl, sa, "patch", "nodeoverlays.karpenter.sh", "--subresource=status")
    assert not can(kubectl, sa, "patch", "nodeoverlays.karpenter.sh")
    assert not can(kubectl, sa, "create", "pods", "-n", "default")

    # Karpenter's aggregated roles: the built-in admin and edit ClusterRoles gain NodePools
    for role in ("admin", "edit"):
        wait_until(
            lambda role=role: any(
                "karpenter.sh" in rule.get("apiGroups", [])
                and "nodepools" in rule.get("resources", [])
                and "create" in rule.get("verbs", [])
                for rule in kubectl.json("get", "clusterrole", role).get("rules") or []
            ),
            timeout=60,
            message=f"NodePool rights aggregated into ClusterRole {role}",
        )

    generation = deployment["metadata"]["generation"]
    cluster_helm(
        "upgrade",
        "karpenter",
        str(CHART),
        "--namespace",
        ns,
        "--reuse-values",
        "--set",
        "settings.batchIdleDuration=2s",
    )
    upgraded = kubectl.json("get", "deployment", "karpenter", "-n", ns)
    assert upgraded["metadata"]["generation"] > generation
    env = env_of(upgraded)
    assert env["BATCH_IDLE_DURATION"] == "2s"
    assert env["CLUSTER_NAME"] == "test-cluster"  # reused
    ctr = upgraded["spec"]["template"]["spec"]["containers"][0]
    assert ctr["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}  # reused

    kubectl.apply(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "survives-uninstall"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "default",
                        },
                        "requirements": [],
                    }
                }
            },
        }
    )
    cluster_helm("uninstall", "karpenter", "--namespace", ns, "--wait", timeout=180)
    assert not kubectl("get", "deployment", "-n", ns, "-o", "name").stdout.strip()
    gone = kubectl("get", "clusterrole", "karpenter", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    # helm never deletes the CRDs of crds/, nor so the objects of those kinds
    kubectl("get", "crd", "nodepools.karpenter.sh", "nodeclaims.karpenter.sh")
    kubectl("get", "nodepool", "survives-uninstall")
