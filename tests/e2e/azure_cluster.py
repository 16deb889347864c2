"""The AKS cluster the Azure e2e and chart tests play against the fake ARM: its subscription,
node resource group, subnet and node images, the upstream example AKSNodeClass with a NodePool
of D sizes, karpy's settings for it, and CoreDNS's Service at a custom ClusterIP."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubetest import Kubectl

from tests.e2e.support import nodeclaims
from tests.integration.azure.cluster import LOCATION, SUBSCRIPTION
from tests.integration.azure.fakearm import UBUNTU_GALLERY, ThreadedFakeArm

REPO = Path(__file__).resolve().parents[2]
RESOURCE_GROUP = "MC_rg_aks-e2e_westus2"
SUBNET = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
    "Microsoft.Network/virtualNetworks/aks-vnet-12345678/subnets/aks-subnet"
)
# In the local control plane's service CIDR (10.0.0.0/24), and not AKS's default 10.0.0.10.
CUSTOM_DNS = "10.0.0.54"

NODECLASS = {
    "apiVersion": "karpenter.azure.com/v1beta1",
    "kind": "AKSNodeClass",
    "metadata": {"name": "default"},
    "spec": {"imageFamily": "Ubuntu2204"},
}
NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.azure.com",
                    "kind": "AKSNodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand"],
                    },
                    {"key": "karpenter.azure.com/sku-family", "operator": "In", "values": ["D"]},
                ],
            }
        },
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"},
    },
}


def seed(arm: ThreadedFakeArm) -> None:
    snapshot = json.loads((REPO / "karpy/cloudprovider/azure/data/snapshot.json").read_text())
    arm.state.skus[LOCATION] = [s for s in snapshot["skus"] if LOCATION in s["locations"]]
    items = json.loads((REPO / "hack/azure/retail-prices-2023-12-18.json").read_text())["Items"]
    arm.state.prices = [i for i in items if i["armRegionName"] == LOCATION]
    arm.state.images[(UBUNTU_GALLERY, "2204gen2containerd")] = ["202501.12.0"]
    arm.state.images[(UBUNTU_GALLERY, "2204gen2arm64containerd")] = ["202501.12.0"]
    arm.state.subnets.add(SUBNET.lower())
    # karpy's SDK clients poll long-running operations at the pace ARM's Retry-After sets
    # (0 would mean the SDK's own 30 s): one second, as a busy ARM might answer.
    arm.state.retry_after = "1"


def karpy_env(arm: ThreadedFakeArm) -> dict[str, str]:
    return {
        "PROVIDER": "azure",
        "CLUSTER_NAME": "aks-e2e",
        "CLUSTER_ENDPOINT": "https://aks-e2e-dns-12345678.hcp.westus2.azmk8s.io:443",
        "KUBELET_BOOTSTRAP_TOKEN": "e2e000.0123456789abcdef",
        "ARM_SUBSCRIPTION_ID": SUBSCRIPTION,
        "LOCATION": LOCATION,
        "AZURE_NODE_RESOURCE_GROUP": RESOURCE_GROUP,
        "VNET_SUBNET_ID": SUBNET,
        "ARM_ENDPOINT": arm.url,
        "AZURE_PRICES_ENDPOINT": arm.url,
        "IDENTITY_ENDPOINT": f"{arm.url}/msi/token",
        "IDENTITY_HEADER": "e2e",
        "SSL_CERT_FILE": str(arm.cert_path),
    }


def web_pod(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "web",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        },
    }


def launched(kubectl: Kubectl) -> dict[str, Any] | None:
    for claim in nodeclaims(kubectl):
        if (claim.get("status") or {}).get("providerID", "").startswith("azure:///"):
            return claim
    return None


def running_on(kubectl: Kubectl, namespace: str, node: str) -> bool:
    pod = kubectl.json("get", "pod", "web", "-n", namespace)
    return pod["spec"].get("nodeName") == node and pod["status"].get("phase") == "Running"


@contextlib.contextmanager
def custom_kube_dns(kubectl: Kubectl) -> Iterator[str]:
    """CoreDNS's Service as AKS names it, with a ClusterIP of a custom service CIDR's."""
    kubectl("delete", "service", "kube-dns", "-n", "kube-system", "--ignore-not-found")
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {
                "clusterIP": CUSTOM_DNS,
                "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}],
            },
        }
    )
    try:
        yield CUSTOM_DNS
    finally:
        kubectl("delete", "service", "kube-dns", "-n", "kube-system", "--ignore-not-found")
