"""Cluster-wide facts and settings that reach every Azure node, on the real control plane and
the fake ARM: the kubelet's `--cluster-dns` (`DNS_SERVICE_IP`, else the kube-system/kube-dns
Service's ClusterIP, else AKS's 10.0.0.10), read back from the VM's custom data as the node
reads it, and `ADDITIONAL_TAGS` on the VM and its NIC under the AKSNodeClass's own tags."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import pytest
from azure.mgmt.compute.aio import ComputeManagementClient
from azure.mgmt.network.aio import NetworkManagementClient
from azure.mgmt.resourcegraph.aio import ResourceGraphClient

from karpy.cloudprovider.azure.provider import AzureCloudProvider
from karpy.cloudprovider.kubedns import DNS_TTL, KubeDNS
from karpy.kube.client import Client
from karpy.kube.resources import SERVICES
from karpy.settings import SettingsError, load_settings
from tests.integration.azure.cluster import (
    SETTINGS,
    NodeClasses,
    build_provider,
    claim,
    nodeclass,
    seed_skus,
)
from tests.integration.azure.fakearm import FakeArm
from tests.integration.azure.nodeboot import read_custom_data

# In the local control plane's service CIDR (10.0.0.0/24), and not AKS's default 10.0.0.10.
CUSTOM_DNS = "10.0.0.53"


@pytest.fixture
async def kube(kubeconfig: str) -> AsyncIterator[Client]:
    client = await Client.connect(kubeconfig=kubeconfig)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def kube_dns(kube: Client) -> AsyncIterator[str]:
    """CoreDNS's Service as AKS names it, with a ClusterIP of a custom service CIDR's."""
    created = await kube.create(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {
                "clusterIP": CUSTOM_DNS,
                "selector": {"k8s-app": "kube-dns"},
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                ],
            },
        },
        namespace="kube-system",
    )
    try:
        yield str(created["spec"]["clusterIP"])
    finally:
        await kube.delete(SERVICES, "kube-dns", namespace="kube-system")


def _provider(
    arm: FakeArm,
    kube: Client,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
    **settings: str,
) -> AzureCloudProvider:
    seed_skus(arm)
    return build_provider(
        compute=compute,
        network=network,
        graph=graph,
        classes=NodeClasses(nodeclass()),
        settings=settings,
        kube_dns=KubeDNS(kube),
    )


def _kubelet_flags(arm: FakeArm) -> Mapping[str, str]:
    (vm,) = arm.state.of_kind("vm")
    boot = read_custom_data(vm["properties"]["osProfile"]["customData"]).variables
    return dict(flag.split("=", 1) for flag in boot["KUBELET_FLAGS"].split(" "))


async def test_the_kube_dns_service_s_cluster_ip_is_the_nodes_cluster_dns(
    arm: FakeArm,
    kube: Client,
    kube_dns: str,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
) -> None:
    assert kube_dns == CUSTOM_DNS
    provider = _provider(arm, kube, compute, network, graph)
    await provider.create(claim())
    assert _kubelet_flags(arm)["--cluster-dns"] == CUSTOM_DNS


async def test_dns_service_ip_wins_over_the_kube_dns_service(
    arm: FakeArm,
    kube: Client,
    kube_dns: str,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
) -> None:
    provider = _provider(arm, kube, compute, network, graph, DNS_SERVICE_IP="10.2.0.10")
    await provider.create(claim())
    assert _kubelet_flags(arm)["--cluster-dns"] == "10.2.0.10"


async def test_without_either_nodes_keep_aks_s_default(
    arm: FakeArm,
    kube: Client,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
) -> None:
    provider = _provider(arm, kube, compute, network, graph)
    await provider.create(claim())
    assert _kubelet_flags(arm)["--cluster-dns"] == "10.0.0.10"


def test_a_malformed_dns_service_ip_stops_start_up_naming_it() -> None:
    with pytest.raises(SettingsError, match=r"DNS_SERVICE_IP .*'999\.1\.2\.3' is not an IP"):
        load_settings({**SETTINGS, "DNS_SERVICE_IP": "999.1.2.3"})
    with pytest.raises(SettingsError, match=r"ADDITIONAL_TAGS .*'team' is not a key=value"):
        load_settings({**SETTINGS, "ADDITIONAL_TAGS": "env=prod,team"})


async def test_additional_tags_are_on_the_vm_and_nic_under_the_class_s_tags(
    arm: FakeArm,
    kube: Client,
    compute: ComputeManagementClient,
    network: NetworkManagementClient,
    graph: ResourceGraphClient,
) -> None:
    # The class (cluster.py's) tags team=platform; ADDITIONAL_TAGS names team too.
    provider = _provider(
        arm, kube, compute, network, graph, ADDITIONAL_TAGS="cost-center=42, team=ops,,"
    )
    await provider.create(claim())
    (vm,), (nic,) = arm.state.of_kind("vm"), arm.state.of_kind("nic")
    for resource in (vm, nic):
        assert resource["tags"]["cost-center"] == "42"
        assert resource["tags"]["team"] == "platform"
        assert resource["tags"]["karpenter.azure.com_cluster"] == "test-cluster"


async def test_the_kube_dns_ip_is_re_read_every_five_minutes_and_kept_while_unreadable(
    kube: Client, kube_dns: str
) -> None:
    now = [0.0]
    dns = KubeDNS(kube, clock=lambda: now[0])
    assert await dns.ip() == CUSTOM_DNS
    await kube.delete(SERVICES, "kube-dns", namespace="kube-system")
    await kube.create(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {"clusterIP": "10.0.0.55", "ports": [{"port": 53, "protocol": "UDP"}]},
        },
        namespace="kube-system",
    )
    now[0] = DNS_TTL - 1
    assert await dns.ip() == CUSTOM_DNS  # cached
    now[0] = DNS_TTL
    assert await dns.ip() == "10.0.0.55"  # the recreated Service's
    await kube.delete(SERVICES, "kube-dns", namespace="kube-system")
    now[0] = 2 * DNS_TTL
    assert await dns.ip() == "10.0.0.55"  # a failed read keeps what was known
    assert await KubeDNS(kube).ip() is None  # never found: the caller's default
    await kube.create(  # for the fixture to delete
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {"ports": [{"port": 53, "protocol": "UDP"}]},
        },
        namespace="kube-system",
    )
