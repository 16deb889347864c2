"""The AWS provider's plugin: EC2NodeClass, the EC2 cloud provider built from the settings, and
the EC2NodeClass controller and the garbage collection of launch templates and instance profiles.

Settings: `CLUSTER_NAME` (required), `CLUSTER_ENDPOINT` (default: `eks:DescribeCluster`),
`CLUSTER_CA_BUNDLE` (default: the CA karpy trusts), `VM_MEMORY_OVERHEAD_PERCENT`,
`RESERVED_ENIS`, `ISOLATED_VPC`, `INTERRUPTION_QUEUE` (the interruption reconciler runs only when
it is set); the SDK's own environment gives
the region (`AWS_REGION` or `AWS_DEFAULT_REGION`, required), credentials and `AWS_ENDPOINT_URL`
(a moto server, a VPC endpoint). The service CIDR, cluster DNS IP and Kubernetes version are
read while running (`clusterfacts.py`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

import structlog

from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClass
from karpy.apis.descriptors import EC2NODECLASSES, NODECLAIMS, NODEOVERLAYS
from karpy.cloudprovider.aws.cleanup import NodeClassCleanup
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.cluster import discover_cluster
from karpy.cloudprovider.aws.clusterfacts import ClusterFacts, kubernetes_version
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.interruption import InterruptionController, MessageHandler
from karpy.cloudprovider.aws.launchtemplategc import LaunchTemplateGC
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.nodeclasscontroller import EC2NodeClassController
from karpy.cloudprovider.aws.nodeclassread import read_nodeclass
from karpy.cloudprovider.aws.placementgroups import PlacementGroups
from karpy.cloudprovider.aws.pricerefresh import OnDemandPriceRefresher
from karpy.cloudprovider.aws.pricing import PricingProvider
from karpy.cloudprovider.aws.profilegc import InstanceProfileGC
from karpy.cloudprovider.aws.provider import AWSCloudProvider, NodeClassLookup
from karpy.cloudprovider.aws.reservationcapacitytype import ReservationCapacityType
from karpy.cloudprovider.aws.reservationexpiry import ReservationExpiration
from karpy.cloudprovider.aws.reservations import CapacityReservations
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.cloudprovider.overlays import LaunchOverlays
from karpy.cloudprovider.registry import PluginContext, ProviderUnavailableError
from karpy.cloudprovider.types import CloudProvider
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.errors import NotFoundError
from karpy.kube.resources import NODES, Resource
from karpy.settings import Settings

__all__ = ["PLUGIN", "AWSPlugin", "kubernetes_version", "region_of"]

log = structlog.get_logger("karpy.cloudprovider.aws")


def region_of(environ: Mapping[str, str]) -> str:
    """The SDK's region: `AWS_REGION`, else `AWS_DEFAULT_REGION`."""
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or ""
    if not region.strip():
        raise ProviderUnavailableError(
            "AWS_REGION (or AWS_DEFAULT_REGION) is required with PROVIDER=aws"
        )
    return region.strip()


def clients_from_env() -> AWSClients:
    """Clients for the SDK's region and endpoint (`AWS_ENDPOINT_URL`: moto, a VPC endpoint)."""
    return AWSClients(
        region_of(os.environ), endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None
    )


def build_aws_provider(
    settings: Settings,
    *,
    clients: AWSClients,
    cluster_endpoint: str,
    kubernetes_version: str,
    nodeclass_of: NodeClassLookup,
    ca_bundle: str | None = None,
    overlays: LaunchOverlays | None = None,
    kube: Client | None = None,
) -> AWSCloudProvider:
    """The provider and its parts, from the settings (no API call yet). `kube` is where the
    Kubernetes version and the kube-dns Service are re-read; without it the version stays."""
    facts = ClusterFacts(
        clients,
        cluster_name=settings.cluster_name,
        kube=kube,
        kubernetes_version=kubernetes_version,
    )
    unavailable = UnavailableOfferings()
    gate = settings.feature_gates.reserved_capacity
    # One count of each reservation's free instances, one placement-group cache: the resolver
    # fills them, the instance types and the launches read them.
    reservations = CapacityReservations(clients)
    placement_groups = PlacementGroups(clients)
    instance_types = InstanceTypeProvider(
        clients,
        PricingProvider(clients, isolated_vpc=settings.aws.isolated_vpc),
        unavailable,
        vm_memory_overhead_percent=settings.aws.vm_memory_overhead_percent,
        reserved_enis=settings.aws.reserved_enis,
        reservations=reservations if gate else None,
        placement_groups=placement_groups,
    )
    instances = AWSInstances(
        clients,
        ClusterInfo(name=settings.cluster_name, endpoint=cluster_endpoint, ca_bundle=ca_bundle),
        unavailable=unavailable,
        facts=facts,
        reservations=reservations,
        placement_groups=placement_groups,
        reserved_capacity=gate,
    )
    resolver = NodeClassResolver(
        clients,
        cluster_name=settings.cluster_name,
        kubernetes_version=kubernetes_version,
        facts=facts,
        reservations=reservations,
        placement_groups=placement_groups,
        reserved_capacity=gate,
    )
    return AWSCloudProvider(
        nodeclass_of=nodeclass_of,
        instance_types=instance_types,
        instances=instances,
        resolver=resolver,
        clients=clients,
        overlays=overlays,
    )


class AWSPlugin:
    """EC2 instances for NodeClaims of EC2NodeClasses."""

    @property
    def name(self) -> str:
        return "aws"

    @property
    def nodeclasses(self) -> tuple[Resource, ...]:
        return (EC2NODECLASSES,)

    def check(self, settings: Settings) -> None:
        region_of(os.environ)

    async def build(self, settings: Settings, *, client: Client, cache: Cache) -> CloudProvider:
        clients = clients_from_env()
        informer = cache.informer(EC2NODECLASSES)

        async def nodeclass_of(name: str) -> EC2NodeClass | None:
            found = informer.get(name)
            if found is None:
                try:
                    found = await client.get(EC2NODECLASSES, name)
                except NotFoundError:
                    return None
            return read_nodeclass(found)

        try:
            access = await discover_cluster(
                clients,
                cluster_name=settings.cluster_name,
                endpoint=settings.aws.cluster_endpoint,
                ca_bundle=settings.aws.cluster_ca_bundle,
                ca_file=client.ca_file,
            )
            version = kubernetes_version(await client.server_version())
        except BaseException:
            await clients.close()
            raise
        return build_aws_provider(
            settings,
            clients=clients,
            cluster_endpoint=access.endpoint,
            ca_bundle=access.ca_bundle,
            kubernetes_version=version,
            nodeclass_of=nodeclass_of,
            kube=client,
            overlays=LaunchOverlays(
                cache.informer(NODEOVERLAYS).list if settings.feature_gates.node_overlay else None
            ),
        )

    def register(self, ctx: PluginContext, provider: CloudProvider) -> None:
        """Add the AWS controllers: the EC2NodeClass reconciler, the garbage collectors of
        launch templates and instance profiles and (with `ReservedCapacity`) the deletion of
        NodeClaims in expiring capacity blocks and the demotion of reserved NodeClaims whose
        reservation is gone, when NodeClasses are resolved against EC2, and the
        leader-only interruption reconciler when `INTERRUPTION_QUEUE` names a queue (off, with a
        log line saying so, otherwise). The collectors share one cleanup helper."""
        if not isinstance(provider, AWSCloudProvider):
            raise TypeError(f"the aws plugin cannot manage NodeClasses of {provider.name!r}")
        if provider.resolver is not None:
            cleanup = NodeClassCleanup(
                provider.resolver.clients, cluster_name=ctx.settings.cluster_name
            )
            ctx.add(
                EC2NodeClassController(
                    client=ctx.client,
                    nodeclasses=ctx.cache.informer(EC2NODECLASSES),
                    nodeclaims=ctx.cache.informer(NODECLAIMS),
                    resolver=provider.resolver,
                    cleanup=cleanup,
                    ca_bundle=provider.instances.cluster.ca_bundle,
                    isolated_vpc=ctx.settings.aws.isolated_vpc,
                    clock=ctx.clock,
                )
            )
            ctx.add(
                LaunchTemplateGC(
                    nodeclaims=ctx.cache.informer(NODECLAIMS),
                    templates=provider.instances.launch_templates,
                    cleanup=cleanup,
                    clock=ctx.clock,
                )
            )
            reservations = provider.instances.reservations
            if ctx.settings.feature_gates.reserved_capacity and reservations is not None:
                ctx.add(
                    ReservationExpiration(
                        client=ctx.client,
                        nodeclaims=ctx.cache.informer(NODECLAIMS),
                        reservations=reservations,
                        clock=ctx.clock,
                    )
                )
                ctx.add(
                    ReservationCapacityType(
                        client=ctx.client,
                        nodeclaims=ctx.cache.informer(NODECLAIMS),
                        nodes=ctx.cache.informer(NODES),
                        instances=provider.instances,
                        clock=ctx.clock,
                    )
                )
            if not ctx.settings.aws.isolated_vpc:
                ctx.add(
                    InstanceProfileGC(
                        nodeclasses=ctx.cache.informer(EC2NODECLASSES),
                        nodeclaims=ctx.cache.informer(NODECLAIMS),
                        cleanup=cleanup,
                        clock=ctx.clock,
                    )
                )
        ctx.add_runnable(
            OnDemandPriceRefresher(
                pricing=provider.instance_types.pricing,
                instance_types=provider.instance_types,
            ),
            leader_only=False,
        )
        queue = ctx.settings.aws.interruption_queue.strip()
        if not queue:
            log.info("interruption handling is off: INTERRUPTION_QUEUE is not set")
            return
        handler = MessageHandler(
            client=ctx.client,
            cache=ctx.cache,
            events=ctx.events,
            unavailable=provider.instances.unavailable,
            clock=ctx.clock,
            on_disrupted=ctx.count_disrupted,
            reservations=provider.instances.reservations,
        )
        ctx.add_runnable(
            InterruptionController(
                clients=provider.clients or clients_from_env(),
                queue=queue,
                handler=handler,
                clock=ctx.clock,
            ),
            leader_only=True,
        )

    async def close(self, provider: CloudProvider) -> None:
        """Close the aioboto3 clients `build` opened (EC2, SSM, IAM, EKS, SQS): their
        connection pools would otherwise be left for the garbage collector, unclosed."""
        if isinstance(provider, AWSCloudProvider):
            await provider.close()
            log.info("AWS clients closed")


PLUGIN: Final = AWSPlugin()
