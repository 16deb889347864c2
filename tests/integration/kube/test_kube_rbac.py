"""manifests/deploy applies cleanly, and `karpy run` with exactly that RBAC (impersonating its
ServiceAccount) syncs every informer, wins the lease and runs without a Forbidden error."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from kubetest import Kubectl

from tests.integration.kube.kube_support import KarpyRun, kubeconfig_variant, wait_for

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "manifests" / "deploy"
SERVICE_ACCOUNT = "system:serviceaccount:kube-system:karpy"


def rendered(kubectl: Kubectl) -> list[dict[str, Any]]:
    text = kubectl("kustomize", str(DEPLOY)).stdout
    import yaml

    return [doc for doc in yaml.safe_load_all(text) if doc]


def can(kubectl: Kubectl, *args: str) -> bool:
    proc = kubectl("auth", "can-i", f"--as={SERVICE_ACCOUNT}", *args, check=False)
    return proc.stdout.strip() == "yes"


def test_deploy_manifests_apply_and_have_the_expected_shape(kubectl: Kubectl) -> None:
    kubectl("apply", "-k", str(DEPLOY), "--dry-run=server")
    docs = {(d["kind"], d["metadata"]["name"]): d for d in rendered(kubectl)}
    for doc in docs.values():
        assert doc["metadata"]["labels"]["app.kubernetes.io/name"] == "karpy"
    deployment = docs[("Deployment", "karpy")]
    assert deployment["metadata"]["namespace"] == "kube-system"
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "karpy"
    assert pod["priorityClassName"] == "system-cluster-critical"
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
    ]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["topologyKey"] == "kubernetes.io/hostname"
    container = pod["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert container["livenessProbe"]["httpGet"]["port"] == "http"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http-metrics": 8080, "http": 8081}
    assert docs[("PodDisruptionBudget", "karpy")]["spec"]["maxUnavailable"] == 1
    assert docs[("Service", "karpy")]["spec"]["ports"][0]["port"] == 8080
    assert ("ServiceAccount", "karpy") in docs


@pytest.mark.slow
def test_karpy_run_with_exactly_the_deploy_rbac(
    kubeconfig: str, kubectl: Kubectl, kube_crds: None, tmp_path: Path
) -> None:
    # Everything for real except the Deployment's pods (scaled to zero: they could never run).
    docs = rendered(kubectl)
    for doc in docs:
        if doc["kind"] == "Deployment":
            doc["spec"]["replicas"] = 0
    kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    )

    # least privilege, spot checks
    assert can(kubectl, "list", "nodeclaims.karpenter.sh")
    assert can(kubectl, "create", "pods", "--subresource=eviction", "-n", "default")
    assert can(kubectl, "update", "leases/karpenter-leader-election", "-n", "kube-system")
    assert not can(kubectl, "update", "leases/someone-else", "-n", "kube-system")
    assert not can(kubectl, "list", "secrets", "-n", "kube-system")
    assert not can(kubectl, "delete", "nodepools.karpenter.sh")
    assert not can(kubectl, "create", "pods", "-n", "default")

    as_karpy = kubeconfig_variant(
        kubeconfig, tmp_path / "karpy.kubeconfig", impersonate=SERVICE_ACCOUNT
    )
    run = KarpyRun(
        kubeconfig=as_karpy,
        log_path=tmp_path / "karpy.log",
        env={"SYSTEM_NAMESPACE": "kube-system", "POD_NAME": "rbac-test"},
    ).start()
    try:
        wait_for(lambda: run.readyz() == 200, timeout=90, what="every informer to sync")
        wait_for(lambda: run.leading() is True, timeout=60, what="the lease in kube-system")
        time.sleep(3)  # let the controllers start and do their first passes
        assert run.alive()
    finally:
        run.stop()
    log = run.log()
    assert "cache synced" in log
    forbidden = [
        line for line in log.splitlines() if re.search(r"(?<![\d.])403(?!\d)|[Ff]orbidden", line)
    ]
    assert not forbidden, "\n".join(forbidden[:10])
