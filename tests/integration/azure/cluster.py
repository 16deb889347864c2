"""The test AKS cluster the Azure integration tests share: its subscription, node resource group,
region and subnet, karpy's settings for it, the test SKU records served as the region's, test
prices, AKSNodeClass and NodeClaim builders, and the one way the tests build an
`AzureCloudProvider` from the SDK clients (`build_provider`). The fake ARM and the SDK client
fixtures are in conftest.py, with the `classes` and `provider` fixtures built from these."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient
from azure.mgmt.resourcegraph.aio import ResourceGraphClient

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.azure.plugin import build_azure_provider
from karpy.cloudprovider.azure.pricing import parse_prices
from karpy.cloudprovider.azure.provider import AzureCloudProvider
from karpy.cloudprovider.kubedns import KubeDNS
from karpy.settings import load_settings
from tests.integration.azure.fakearm import FakeArm

SUBSCRIPTION = "00000000-0000-0000-0000-000000000001"
RESOURCE_GROUP = "MC_rg_aks_westus2"
LOCATION = "westus2"
SUBNET = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
    "Microsoft.Network/virtualNetworks/aks-vnet-12345678/subnets/aks-subnet"
)
OTHER_SUBNET = SUBNET.replace("aks-subnet", "other-subnet")
# The Ubuntu node image definitions of each release, in the order a class's status lists them.
UBUNTU_2204 = ["2204gen2containerd", "2204containerd", "2204gen2arm64containerd"]
UBUNTU_2404 = ["2404gen2containerd", "2404containerd", "2404gen2arm64containerd"]

SETTINGS = {
    "PROVIDER": "azure",
    "CLUSTER_NAME": "test-cluster",
    "CLUSTER_ENDPOINT": "https://test-cluster-dns-12345678.hcp.westus2.azmk8s.io:443",
    "ARM_SUBSCRIPTION_ID": SUBSCRIPTION,
    "LOCATION": LOCATION,
    "AZURE_NODE_RESOURCE_GROUP": RESOURCE_GROUP,
    "VNET_SUBNET_ID": SUBNET,
    "KUBELET_BOOTSTRAP_TOKEN": "abcdef.0123456789abcdef",
    "KUBELET_IDENTITY_CLIENT_ID": "kubelet-client-1",
    "LINUX_ADMIN_USERNAME": "aksadmin",
}
CA_BUNDLE = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="

SKU_DATA = Path(__file__).parents[2] / "unit" / "cloudprovider" / "azure" / "data"
_RECORDS = json.loads((SKU_DATA / "westcentralus-skus.json").read_text())["value"]
# Test prices, not Azure's: D2s_v3 is the cheapest fit, D4s_v3 the next.
PRICES = [
    {"armSkuName": "Standard_D2s_v3", "retailPrice": 0.1, "skuName": "D2s v3"},
    {"armSkuName": "Standard_D4s_v3", "retailPrice": 0.2, "skuName": "D4s v3"},
    {"armSkuName": "Standard_D2s_v3", "retailPrice": 0.02, "skuName": "D2s v3 Spot"},
]
TAGS = {"team": "platform"}


def seed_skus(arm: FakeArm) -> None:
    """The test SKU records as westus2's, zonal (1, 2, 3) and spot-capable."""
    records = []
    for record in copy.deepcopy(_RECORDS):
        record["locations"] = [LOCATION]
        record["locationInfo"] = [{"location": LOCATION, "zones": ["1", "2", "3"]}]
        record["capabilities"].append({"name": "LowPriorityCapable", "value": "True"})
        records.append(record)
    arm.state.skus[LOCATION] = records


async def cluster_version() -> str:
    """The apiserver's version, as the provider asks for it."""
    return "v1.33.2"


class NodeClasses:
    """The provider's `nodeclass_of` seam: the one AKSNodeClass a test holds, found by name;
    tests swap `current` to change the class the provider reads."""

    def __init__(self, current: AKSNodeClass | None) -> None:
        self.current = current

    async def __call__(self, name: str) -> AKSNodeClass | None:
        return self.current if self.current and self.current.metadata.name == name else None


def nodeclass(*, tags: Mapping[str, str] | None = TAGS, **spec: Any) -> AKSNodeClass:
    """The AKSNodeClass `default`: Ubuntu 22.04, tagged `tags` (None: no `tags`), and `spec`."""
    base: dict[str, Any] = {"imageFamily": "Ubuntu2204"}
    if tags is not None:
        base["tags"] = dict(tags)
    return AKSNodeClass.model_validate(
        {
            "apiVersion": "karpenter.azure.com/v1beta1",
            "kind": "AKSNodeClass",
            "metadata": {"name": "default"},
            "spec": {**base, **spec},
        }
    )


def claim(name: str = "default-abcde", *, types: tuple[str, ...] = ()) -> NodeClaim:
    """An on-demand Linux NodeClaim of NodePool `default` for 1.5 CPUs and 2Gi on the class
    `default`, tainted dedicated=web, limited to the instance `types` if any."""
    requirements: list[dict[str, Any]] = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    ]
    if types:
        requirements.append(
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)}
        )
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "labels": {"karpenter.sh/nodepool": "default"},
            },
            "spec": {
                "requirements": requirements,
                "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}},
                "nodeClassRef": {
                    "group": "karpenter.azure.com",
                    "kind": "AKSNodeClass",
                    "name": "default",
                },
                "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
            },
        }
    )


def build_provider(
    *,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
    classes: NodeClasses,
    settings: Mapping[str, str] | None = None,
    prices: Sequence[Mapping[str, Any]] = PRICES,
    kube_dns: KubeDNS | None = None,
) -> AzureCloudProvider:
    """The provider of `SETTINGS` (with `settings` over them) on the SDK clients, reading the
    class from `classes`, with `CA_BUNDLE`, `cluster_version` and the test `prices` (the SKUs
    are whatever the fake ARM serves)."""
    built = build_azure_provider(
        load_settings({**SETTINGS, **(settings or {})}),
        compute=compute,
        network=network,
        graph=graph,
        nodeclass_of=classes,
        ca_bundle=CA_BUNDLE,
        cluster_version=cluster_version,
        kube_dns=kube_dns,
    )
    built.instance_types.set_prices(parse_prices(list(prices)))
    return built
