"""The AKS cluster the Azure e2e and chart tests play against the fake ARM: its subscription,
node resource group, subnet and node images, the upstream example AKSNodeClass with a NodePool
of D sizes, karpy's settings for it, and CoreDNS's Service at a custom ClusterIP."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from kubetest import Kubectl

from tests import kit
from tests.e2e.support import kube_dns_service, launched_claim, nodeclaims, wait_for
from tests.integration.azure.cluster import LOCATION, SUBSCRIPTION
from tests.integration.azure.fakearm import UBUNTU_GALLERY, ThreadedFakeArm
from tests.integration.azure.nodeboot import read_custom_data

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
NODEPOOL = kit.nodepool(
    "default",
    kind="AKSNodeClass",
    group="karpenter.azure.com",
    requirements=[
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.azure.com/sku-family", "operator": "In", "values": ["D"]},
    ],
    policy="WhenEmptyOrUnderutilized",
    consolidate_after="0s",
)


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


def launched(kubectl: Kubectl) -> dict[str, Any] | None:
    return launched_claim(kubectl, "azure:///")


def running_on(kubectl: Kubectl, namespace: str, node: str) -> bool:
    pod = kubectl.json("get", "pod", "web", "-n", namespace)
    return pod["spec"].get("nodeName") == node and pod["status"].get("phase") == "Running"


def custom_kube_dns(kubectl: Kubectl) -> contextlib.AbstractContextManager[str]:
    """CoreDNS's Service as AKS names it, with a ClusterIP of a custom service CIDR's."""
    return kube_dns_service(kubectl, CUSTOM_DNS)


def kubelet_flags(vm: dict[str, Any]) -> dict[str, str]:
    """The kubelet flags of a VM's custom data, read as the node reads them."""
    boot = read_custom_data(vm["properties"]["osProfile"]["customData"]).variables
    return dict(flag.split("=", 1) for flag in boot["KUBELET_FLAGS"].split(" "))


def wait_consolidated_away(kubectl: Kubectl, arm: ThreadedFakeArm, what: str = "node") -> None:
    """Until the empty node is gone: its VM and NIC deleted, no NodeClaim left."""
    wait_for(
        lambda: not arm.state.of_kind("vm") and not arm.state.of_kind("nic"),
        timeout=180,
        message=f"the empty {what} consolidated away, its VM and NIC deleted",
    )
    wait_for(lambda: not nodeclaims(kubectl), timeout=60, message="no NodeClaim left")
