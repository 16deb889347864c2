"""Cluster facts against the moto server and the local control plane: the service CIDR comes
from eks:DescribeCluster and is cached, refreshed and never lost to a failed refresh; without it
an AL2023 EC2NodeClass is not Ready (ClusterCIDRResolutionFailed, naming the cause) and its launch
waits; the cluster DNS IP is `kubelet.clusterDNS`, else the kube-dns Service's ClusterIP; the
Kubernetes version is re-read after five minutes."""

from __future__ import annotations

import base64
import email
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from botocore.stub import Stubber  # type: ignore[import-untyped]

from karpy.apis.v1.nodeclaim import ResourceRequirements
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.clusterfacts import (
    CIDR_TTL,
    VERSION_TTL,
    ClusterCIDRError,
    ClusterFacts,
    kubernetes_version,
)
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.launch import LaunchTemplates
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.cloudprovider.types import NodeClassNotReadyError
from karpy.kube import Client
from karpy.kube.resources import SERVICES
from tests.integration.aws.conftest import REGION
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    K8S,
    SERVICE_CIDR,
    World,
    catalog,
    claim_of,
    conditions,
    nodeclass_of,
    world,
)


def facts_of(world: World, *, kube: Client | None = None, version: str = K8S) -> ClusterFacts:  # noqa: F811
    return ClusterFacts(
        world.clients,
        cluster_name=CLUSTER,
        kube=kube,
        kubernetes_version=version,
        clock=world.clock,
    )


async def test_service_cidr_is_read_once_then_refreshed_and_kept_through_a_failed_refresh(
    world: World,  # noqa: F811
) -> None:
    facts = facts_of(world)
    network = await facts.service_network()
    assert (network.cidr, network.ip_family) == (SERVICE_CIDR, "ipv4")
    assert (await facts.service_network()).cidr == SERVICE_CIDR
    assert world.counter.calls["eks.DescribeCluster"] == 1

    async with world.clients.client("eks") as eks:
        await eks.delete_cluster(name=CLUSTER)
    world.clock.now += CIDR_TTL + 1
    assert (await facts.service_network()).cidr == SERVICE_CIDR  # the refresh failed: kept
    assert world.counter.calls["eks.DescribeCluster"] == 2


async def test_a_missing_cluster_names_the_cause_and_is_not_remembered(
    world: World,  # noqa: F811
) -> None:
    facts = ClusterFacts(world.clients, cluster_name="elsewhere", clock=world.clock)
    with pytest.raises(ClusterCIDRError, match=r"DescribeCluster\('elsewhere'\).*NotFound"):
        await facts.service_network()
    async with world.clients.client("eks") as eks:
        await eks.create_cluster(
            name="elsewhere",
            roleArn="arn:aws:iam::123456789012:role/elsewhere",
            resourcesVpcConfig={"subnetIds": []},
            kubernetesNetworkConfig={"serviceIpv4Cidr": "10.7.0.0/16"},
        )
    assert (await facts.service_network()).cidr == "10.7.0.0/16"  # asked again, no TTL wait


def stubbed_eks(responses: list[dict[str, Any]], *, moto_endpoint: str) -> AWSClients:
    """Clients whose EKS client answers DescribeCluster from `responses` (shaped as the EKS
    API reference's DescribeCluster output): moto cannot make an IPv6 or CIDR-less cluster."""

    def stub(service: str, client: Any) -> None:
        if service != "eks":
            return
        stubber = Stubber(client)
        for response in responses:
            stubber.add_response("describe_cluster", response, {"name": CLUSTER})
        stubber.activate()

    return AWSClients(REGION, endpoint_url=moto_endpoint, on_client=stub)


def described(network: dict[str, str]) -> dict[str, Any]:
    return {
        "cluster": {
            "name": CLUSTER,
            "endpoint": "https://prod.example",
            "kubernetesNetworkConfig": network,
        }
    }


async def test_ipv6_clusters_give_the_ipv6_service_cidr(moto_endpoint: str) -> None:
    clients = stubbed_eks(
        [described({"ipFamily": "ipv6", "serviceIpv6Cidr": "fd12:3456:789a::/108"})],
        moto_endpoint=moto_endpoint,
    )
    network = await ClusterFacts(clients, cluster_name=CLUSTER).service_network()
    assert (network.cidr, network.ip_family) == ("fd12:3456:789a::/108", "ipv6")


async def test_a_cluster_without_a_service_cidr_is_an_error_naming_the_fields(
    moto_endpoint: str,
) -> None:
    clients = stubbed_eks([described({"ipFamily": "ipv4"})], moto_endpoint=moto_endpoint)
    with pytest.raises(ClusterCIDRError, match="serviceIpv4Cidr or serviceIpv6Cidr"):
        await ClusterFacts(clients, cluster_name=CLUSTER).service_network()


async def test_al2023_class_is_not_ready_without_the_cidr_and_ready_once_it_is_found(
    world: World,  # noqa: F811
) -> None:
    async with world.clients.client("eks") as eks:
        await eks.delete_cluster(name=CLUSTER)
    resolver = NodeClassResolver(
        world.clients,
        cluster_name=CLUSTER,
        kubernetes_version=K8S,
        clock=world.clock,
        facts=facts_of(world),
    )
    result = await resolver.resolve(nodeclass_of())
    found = conditions(result)
    assert not result.ready
    status, reason, message = found["ValidationSucceeded"]
    assert (status, reason) == ("False", "ClusterCIDRResolutionFailed")
    assert "Failed to detect the cluster CIDR" in message and "ResourceNotFound" in message
    assert found["Ready"][0] == "False"
    assert world.counter.calls["ec2.CreateFleet"] == 0  # no dry run without the CIDR

    async with world.clients.client("eks") as eks:
        await eks.create_cluster(
            name=CLUSTER,
            roleArn="arn:aws:iam::123456789012:role/prod",
            resourcesVpcConfig={"subnetIds": []},
            kubernetesNetworkConfig={"serviceIpv4Cidr": SERVICE_CIDR},
        )
    result = await resolver.resolve(nodeclass_of())
    assert result.ready, conditions(result)


async def test_other_families_do_not_need_the_cidr(world: World) -> None:  # noqa: F811
    async with world.clients.client("eks") as eks:
        await eks.delete_cluster(name=CLUSTER)
    resolver = NodeClassResolver(
        world.clients, cluster_name=CLUSTER, kubernetes_version=K8S, facts=facts_of(world)
    )
    al2023 = nodeclass_of()
    ami = (await resolver.amis(al2023.spec))[0].id
    custom = nodeclass_of(amiFamily="Custom", amiSelectorTerms=[{"id": ami}])
    result = await resolver.resolve(custom)
    assert result.ready, conditions(result)


@pytest.fixture
async def kube(kubeconfig: str) -> AsyncIterator[Client]:
    client = await Client.connect(kubeconfig=kubeconfig)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def kube_dns(kube: Client) -> AsyncIterator[str]:
    """A kube-dns Service in kube-system, as every EKS cluster has; its ClusterIP."""
    created = await kube.create(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {"ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]},
        },
        namespace="kube-system",
    )
    try:
        yield str(created["spec"]["clusterIP"])
    finally:
        await kube.delete(SERVICES, "kube-dns", namespace="kube-system")


async def launched_template(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    instances: AWSInstances,
    **spec: Any,
) -> dict[str, Any]:
    """Launch one NodeClaim of the seed-like AL2023 class (with `spec` over it); the data of
    the launch template moto holds for it."""
    resolved = (await world.resolver().resolve(nodeclass_of(**spec))).apply(nodeclass_of(**spec))
    types = await catalog.for_nodeclass(resolved)
    await instances.create(claim_of(), resolved, types)
    async with world.clients.client("ec2") as ec2:
        template = (await ec2.describe_launch_templates())["LaunchTemplates"][0]
        data: dict[str, Any] = (
            await ec2.describe_launch_template_versions(
                LaunchTemplateId=template["LaunchTemplateId"]
            )
        )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    return data


async def launched_user_data(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    instances: AWSInstances,
) -> str:
    """Launch one NodeClaim of the seed-like AL2023 class; the user data its template holds."""
    data = await launched_template(world, catalog, instances)
    return base64.b64decode(data["UserData"]).decode()


async def test_the_launch_carries_the_cidr_and_the_kube_dns_ip(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    kube: Client,
    kube_dns: str,
) -> None:
    catalog.unavailable = UnavailableOfferings(clock=world.clock)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
        facts=facts_of(world, kube=kube),
    )
    text = await launched_user_data(world, catalog, instances)
    assert f"cidr: {SERVICE_CIDR}" in text
    assert text.split("clusterDNS:", 1)[1].split("\n")[1].strip() == f"- {kube_dns}"


async def test_an_al2023_launch_without_the_cidr_waits_as_for_a_not_ready_class(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    resolved = (await world.resolver().resolve(nodeclass_of())).apply(nodeclass_of())
    types = await catalog.for_nodeclass(resolved)
    async with world.clients.client("eks") as eks:
        await eks.delete_cluster(name=CLUSTER)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=UnavailableOfferings(clock=world.clock),
        facts=facts_of(world),
    )
    world.counter.calls.clear()
    with pytest.raises(NodeClassNotReadyError, match="Failed to detect the cluster CIDR"):
        await instances.create(claim_of(), resolved, types)
    assert world.counter.calls["ec2.CreateFleet"] == 0


async def test_the_kubernetes_version_is_re_read_after_five_minutes(
    world: World,  # noqa: F811
    kube: Client,
) -> None:
    actual = kubernetes_version(await kube.server_version())
    assert actual != "1.20"
    facts = facts_of(world, kube=kube, version="1.20")
    assert await facts.kubernetes_version() == "1.20"  # fresh from start-up
    world.clock.now += VERSION_TTL + 1
    assert await facts.kubernetes_version() == actual


async def test_an_ipv6_cluster_launches_with_a_primary_ipv6_and_raid0_set_up(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
    moto_endpoint: str,
) -> None:
    """An IPv6 cluster (DescribeCluster stubbed: moto makes IPv4 clusters only) and a class
    with RAID0: the template moto stores gives the primary interface a primary IPv6 address,
    and its NodeConfig the IPv6 service CIDR and nodeadm's RAID0 strategy."""
    clients = stubbed_eks(
        [
            described(
                {
                    "ipFamily": "ipv6",
                    "serviceIpv4Cidr": "172.20.0.0/16",
                    "serviceIpv6Cidr": "fd12:3456:789a::/108",
                }
            )
        ],
        moto_endpoint=moto_endpoint,
    )
    catalog.unavailable = UnavailableOfferings(clock=world.clock)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
        facts=ClusterFacts(clients, cluster_name=CLUSTER, clock=world.clock),
    )
    data = await launched_template(
        world,
        catalog,
        instances,
        instanceStorePolicy="RAID0",
        kubelet={"clusterDNS": ["fd12:3456:789a::a"]},
    )
    (interface,) = data["NetworkInterfaces"]
    assert interface["PrimaryIpv6"] is True and interface["Ipv6AddressCount"] == 1
    text = base64.b64decode(data["UserData"]).decode()
    (config,) = [
        yaml.safe_load(str(part.get_payload()))
        for part in email.message_from_string(text).walk()
        if part.get_content_type() == "application/node.eks.aws"
    ]
    assert config["spec"]["cluster"]["cidr"] == "fd12:3456:789a::/108"
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    assert config["spec"]["kubelet"]["config"]["clusterDNS"] == ["fd12:3456:789a::a"]


async def test_an_ipv4_cluster_launches_without_ipv6_addresses(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    catalog.unavailable = UnavailableOfferings(clock=world.clock)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
        facts=facts_of(world),
    )
    data = await launched_template(world, catalog, instances)
    (interface,) = data["NetworkInterfaces"]
    assert "PrimaryIpv6" not in interface and "Ipv6AddressCount" not in interface


async def test_a_nodeclaim_asking_for_efa_launches_with_every_efa_interface(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    """c6in.32xlarge has two EFA interfaces (moto's catalogue, as EC2's): a NodeClaim that
    requests `vpc.amazonaws.com/efa` gets a template with one EFA interface per network card."""
    catalog.unavailable = UnavailableOfferings(clock=world.clock)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
        facts=facts_of(world),
    )
    resolved = (await world.resolver().resolve(nodeclass_of())).apply(nodeclass_of())
    types = [t for t in await catalog.for_nodeclass(resolved) if t.name == "c6in.32xlarge"]
    claim = claim_of()
    for requirement in claim.spec.requirements:
        if requirement.key == "node.kubernetes.io/instance-type":
            requirement.values = ["c6in.32xlarge"]
    claim.spec.resources = ResourceRequirements(requests={"vpc.amazonaws.com/efa": "1"})
    await instances.create(claim, resolved, types)
    async with world.clients.client("ec2") as ec2:
        (template,) = (await ec2.describe_launch_templates())["LaunchTemplates"]
        data = (
            await ec2.describe_launch_template_versions(
                LaunchTemplateId=template["LaunchTemplateId"]
            )
        )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    interfaces = data["NetworkInterfaces"]
    assert [(i["NetworkCardIndex"], i["DeviceIndex"]) for i in interfaces] == [(0, 0), (1, 1)]
    assert {i["InterfaceType"] for i in interfaces} == {"efa"}
