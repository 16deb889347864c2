"""`karpy run` with PROVIDER=azure against the fake ARM on the local control plane.

The fake ARM (`tests/integration/azure/fakearm.py`) runs in a thread of the test process,
seeded with the shipped snapshot's SKUs and retail prices for westus2, the AKS node images and
the nodes' subnet. karpy authenticates with the SDK's `DefaultAzureCredential` unchanged (the
fake serves App Service's managed identity protocol, `IDENTITY_ENDPOINT`) and trusts the fake's
certificate through `SSL_CERT_FILE`. The kwok simulator plays the VMs' kubelets
(`tests.e2e.azure_kubelets`). A pending pod is provisioned as a VM that joins (its kubelet's
cluster DNS the kube-dns Service's custom ClusterIP); when the pod goes, the empty node is
consolidated away and no VM or NIC is left. A pod asking for an NVIDIA GPU, under a NodePool
asking for NVIDIA sizes, gets a GPU VM whose custom data installs the driver and whose Node offers
`nvidia.com/gpu`. With ARM throttling VM and NIC creation and Resource Graph queries (429 with
`Retry-After`), the pod still gets one VM and one NIC, and the calls the fake answers stay bounded.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubetest import Kubectl

from tests.e2e.aws_kubelets import Kubelets
from tests.e2e.azure_cluster import (
    LOCATION,
    NODECLASS,
    NODEPOOL,
    REPO,
    custom_kube_dns,
    karpy_env,
    kubelet_flags,
    launched,
    running_on,
    seed,
    wait_consolidated_away,
)
from tests.e2e.azure_kubelets import AzureMachines
from tests.e2e.conftest import KarpyFactory
from tests.e2e.support import condition, nodeclaims, wait_for, wait_nodepool_ready, web_pod
from tests.integration.azure.fakearm import ThreadedFakeArm
from tests.integration.azure.nodeboot import read_custom_data


@pytest.fixture
def kube_dns(kubectl: Kubectl) -> Iterator[str]:
    with custom_kube_dns(kubectl) as address:
        yield address


def test_a_pending_pod_launches_a_vm_that_joins_and_is_consolidated_away(
    karpy_factory: KarpyFactory, kubectl: Kubectl, kubeconfig: str, namespace: str, kube_dns: str
) -> None:
    with ThreadedFakeArm() as arm, Kubelets(kubeconfig, machines=AzureMachines) as kubelets:
        seed(arm)
        karpy_factory(karpy_env(arm))
        kubectl.apply(NODECLASS)
        kubectl.apply(NODEPOOL)
        wait_nodepool_ready(kubectl, "default", timeout=120)
        kubectl.apply(web_pod(namespace))
        claim = wait_for(
            lambda: launched(kubectl), timeout=120, message="a NodeClaim with an Azure providerID"
        )
        name = claim["metadata"]["name"]
        (vm,) = arm.state.of_kind("vm")
        assert vm["name"] == f"aks-{name}"
        assert vm["tags"]["karpenter.azure.com_cluster"] == "aks-e2e"
        assert vm["tags"]["karpenter.sh_nodepool"] == "default"
        labels = claim["metadata"]["labels"]
        assert (
            vm["properties"]["hardwareProfile"]["vmSize"]
            == labels["node.kubernetes.io/instance-type"]
        )
        assert labels["karpenter.azure.com/sku-family"] == "D"
        image = vm["properties"]["storageProfile"]["imageReference"]["id"]
        assert image.endswith("/2204gen2containerd/versions/202501.12.0")
        # The AKS bootstrapping, read as the node reads it: this cluster's API server, the CA
        # karpy trusts for it, the bootstrap token, the registration taint.
        boot = read_custom_data(vm["properties"]["osProfile"]["customData"]).variables
        assert boot["API_SERVER_NAME"] == "aks-e2e-dns-12345678.hcp.westus2.azmk8s.io"
        assert boot["TLS_BOOTSTRAP_TOKEN"] == "e2e000.0123456789abcdef"
        (cluster,) = yaml.safe_load(Path(kubeconfig).read_text())["clusters"]
        ca = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
        assert base64.b64decode(boot["KUBE_CA_CRT"]) == ca
        flags = kubelet_flags(vm)
        assert flags["--register-with-taints"].startswith("karpenter.sh/unregistered:NoExecute")
        # The cluster's DNS Service, read by karpy through the chart's `-dns` rights.
        assert flags["--cluster-dns"] == kube_dns
        # The cheapest D SKU for 1 CPU and 1Gi in westus2 at the snapshot's prices.
        assert labels["node.kubernetes.io/instance-type"] == "Standard_D2s_v3"

        def initialized() -> bool:
            found = kubectl.json("get", "nodeclaim", name)
            state = condition(found, "Initialized")
            return state is not None and state.get("status") == "True"

        wait_for(initialized, timeout=90, message="NodeClaim Initialized")

        wait_for(
            lambda: running_on(kubectl, namespace, vm["name"]),
            timeout=60,
            message="pod bound to the VM's Node and Running",
        )

        kubectl("delete", "pod", "web", "-n", namespace, timeout=60)
        wait_consolidated_away(kubectl, arm)
    assert kubelets.errors == []


GPU_SKUS = json.loads(
    (REPO / "tests/unit/cloudprovider/azure/data/southcentralus-gpu-skus.json").read_text()
)["value"]
# Test prices, not Azure's: NC6s_v3 is the cheapest NVIDIA size.
GPU_PRICES = {
    "Standard_NC6s_v3": 3.0,
    "Standard_NC16as_T4_v3": 3.2,
    "Standard_NV36ads_A10_v5": 3.3,
    "Standard_NC24ads_A100_v4": 3.7,
    "Standard_ND96asr_v4": 27.0,
    "Standard_ND96isr_MI300X_v5": 1.0,
}


def _seed_gpus(arm: ThreadedFakeArm) -> None:
    seed(arm)
    arm.state.add_skus(LOCATION, GPU_SKUS)
    arm.state.prices += [
        {
            "armSkuName": name,
            "armRegionName": LOCATION,
            "retailPrice": price,
            "skuName": name.removeprefix("Standard_").replace("_", " "),
            "productName": "Virtual Machines N Series",
            "type": "Consumption",
            "unitOfMeasure": "1 Hour",
        }
        for name, price in GPU_PRICES.items()
    ]


def test_a_gpu_pod_gets_a_gpu_vm_whose_node_offers_the_gpu(
    karpy_factory: KarpyFactory, kubectl: Kubectl, kubeconfig: str, namespace: str
) -> None:
    with ThreadedFakeArm() as arm, Kubelets(kubeconfig, machines=AzureMachines) as kubelets:
        _seed_gpus(arm)
        karpy_factory(karpy_env(arm))
        kubectl.apply(NODECLASS)
        nodepool = json.loads(json.dumps(NODEPOOL))
        requirements = nodepool["spec"]["template"]["spec"]["requirements"]
        requirements[-1] = {
            "key": "karpenter.azure.com/sku-gpu-manufacturer",
            "operator": "In",
            "values": ["nvidia"],
        }
        kubectl.apply(nodepool)
        wait_nodepool_ready(kubectl, "default", timeout=120)
        gpu = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
        kubectl.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "trainer", "namespace": namespace},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "trainer",
                            "image": "cuda",
                            "resources": {"requests": gpu, "limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                },
            }
        )
        claim = wait_for(
            lambda: launched(kubectl), timeout=120, message="a NodeClaim with an Azure providerID"
        )
        name = claim["metadata"]["name"]
        labels = claim["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == "Standard_NC6s_v3"
        assert labels["karpenter.azure.com/sku-gpu-manufacturer"] == "nvidia"
        assert labels["karpenter.azure.com/sku-gpu-count"] == "1"
        assert claim["status"]["allocatable"]["nvidia.com/gpu"] == "1"
        (vm,) = arm.state.of_kind("vm")
        assert vm["properties"]["hardwareProfile"]["vmSize"] == "Standard_NC6s_v3"
        boot = read_custom_data(vm["properties"]["osProfile"]["customData"]).variables
        assert boot["GPU_NODE"] == "true"
        assert (boot["GPU_DRIVER_TYPE"], boot["GPU_DRIVER_VERSION"]) == ("cuda", "550.144.03")

        def running() -> bool:
            pod = kubectl.json("get", "pod", "trainer", "-n", namespace)
            return (
                pod["spec"].get("nodeName") == vm["name"]
                and pod["status"].get("phase") == "Running"
            )

        wait_for(running, timeout=120, message="the GPU pod bound to the VM's Node and Running")
        node = kubectl.json("get", "node", vm["name"])
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "1"
        assert node["metadata"]["labels"]["karpenter.azure.com/sku-gpu-manufacturer"] == "nvidia"

        def initialized() -> bool:
            state = condition(kubectl.json("get", "nodeclaim", name), "Initialized")
            return state is not None and state.get("status") == "True"

        # Initialized only once the Node offers the GPU the NodeClaim was launched for.
        wait_for(initialized, timeout=90, message="the GPU NodeClaim Initialized")

        kubectl("delete", "pod", "trainer", "-n", namespace, timeout=60)
        wait_consolidated_away(kubectl, arm, "GPU node")
    assert kubelets.errors == []


# Throttling windows, in seconds: Resource Graph from karpy's start (its garbage collectors list
# VMs at once); from the pod's creation, NIC creation, then VM creation a while longer.
GRAPH_THROTTLED = 30.0
NIC_THROTTLED = 8.0
VM_THROTTLED = 16.0


def test_a_throttled_arm_still_gives_the_pod_one_vm_and_one_nic_with_bounded_calls(
    karpy_factory: KarpyFactory, kubectl: Kubectl, kubeconfig: str, namespace: str
) -> None:
    with ThreadedFakeArm() as arm, Kubelets(kubeconfig, machines=AzureMachines) as kubelets:
        seed(arm)
        arm.state.throttle_for(GRAPH_THROTTLED, {("POST", "graph")}, retry_after="1")
        karpy_factory(karpy_env(arm))
        kubectl.apply(NODECLASS)
        kubectl.apply(NODEPOOL)
        wait_nodepool_ready(kubectl, "default", timeout=120)
        arm.state.throttle_for(NIC_THROTTLED, {("PUT", "nic")}, retry_after="1")
        arm.state.throttle_for(VM_THROTTLED, {("PUT", "vm")}, retry_after="1")
        kubectl.apply(web_pod(namespace))
        claim = wait_for(
            lambda: launched(kubectl), timeout=180, message="a NodeClaim with an Azure providerID"
        )
        (vm,) = arm.state.of_kind("vm")
        (nic,) = arm.state.of_kind("nic")
        assert vm["name"] == nic["name"] == f"aks-{claim['metadata']['name']}"
        wait_for(
            lambda: running_on(kubectl, namespace, vm["name"]),
            timeout=90,
            message="pod bound to the VM's Node and Running",
        )
        # Still one NodeClaim, one VM, one NIC: no launch was made twice, and the NIC made
        # before the VM's throttled PUTs was kept for their retries, never deleted and remade.
        assert len(nodeclaims(kubectl)) == 1
        assert len(arm.state.of_kind("vm")) == len(arm.state.of_kind("nic")) == 1
        assert arm.state.calls[("DELETE", "nic")] == arm.state.calls[("DELETE", "vm")] == 0
        throttled = arm.state.throttled_calls
        # Each throttled kind was refused, so the launch and the garbage collectors' listing
        # really rode through 429s...
        for kind in (("POST", "graph"), ("PUT", "nic"), ("PUT", "vm")):
            assert throttled[kind] > 0, (kind, dict(throttled))
        # ...without a retry storm: the SDK waits Retry-After (1 s) between its 4 tries of a
        # call, and karpy retries a failed call at once (a launch) or after its backoff (a
        # listing), so each caller sends at most 4 requests in 3 s of its kind's window: the
        # two garbage collectors list VMs through Resource Graph, the launch alone makes NICs
        # and VMs. A client that ignored Retry-After would send hundreds a second.
        callers = {("POST", "graph"): 2, ("PUT", "nic"): 1, ("PUT", "vm"): 1}
        windows = {
            ("POST", "graph"): GRAPH_THROTTLED,
            ("PUT", "nic"): NIC_THROTTLED,
            ("PUT", "vm"): VM_THROTTLED - NIC_THROTTLED,
        }
        for kind, window in windows.items():
            assert throttled[kind] <= callers[kind] * (window * 4 / 3 + 4), (kind, dict(throttled))
        # Once through, one VM PUT; the NIC's PUT is repeated (idempotently) only by relaunches
        # after a VM PUT that stayed throttled, each of which was refused at least once.
        assert arm.state.calls[("PUT", "vm")] == 1
        assert 1 <= arm.state.calls[("PUT", "nic")] <= 1 + throttled[("PUT", "vm")]
    assert kubelets.errors == []
