"""The Azure provider's plugin (`PROVIDER=azure`): AKSNodeClass, the Azure cloud provider built
from the settings, and the 12-hourly retail price refresh.

Settings carry the upstream Azure provider's names (`karpy/settings.py`, `AzureSettings`):
`ARM_SUBSCRIPTION_ID`, `LOCATION`, `AZURE_NODE_RESOURCE_GROUP` and `VNET_SUBNET_ID` are required
(with `CLUSTER_NAME`). Credentials come from the Azure SDK's `DefaultAzureCredential` (workload
identity, managed identity, `AZURE_CLIENT_ID`/`AZURE_TENANT_ID`/... in the environment), as the
upstream provider's do. `ARM_ENDPOINT` points the SDK clients at another Resource Manager.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import aiohttp
import structlog

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.descriptors import AKSNODECLASSES, NODECLAIMS
from karpy.cloudprovider.azure.bootstrap import api_server_name
from karpy.cloudprovider.azure.catalog import AzureInstanceTypes
from karpy.cloudprovider.azure.instances import AzureInstances
from karpy.cloudprovider.azure.nicgc import NICGarbageCollection
from karpy.cloudprovider.azure.nodeclassstatus import AKSNodeClassController, AKSNodeClassResolver
from karpy.cloudprovider.azure.pricing import fetch_prices
from karpy.cloudprovider.azure.provider import AzureCloudProvider, LaunchSettings, NodeClassLookup
from karpy.cloudprovider.azure.snapshot import DEFAULT_REGION, snapshot_info, snapshot_prices
from karpy.cloudprovider.azure.unavailable import AzureUnavailableOfferings
from karpy.cloudprovider.kubedns import KubeDNS
from karpy.cloudprovider.registry import PluginContext, ProviderUnavailableError
from karpy.cloudprovider.types import CloudProvider
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.errors import NotFoundError
from karpy.kube.resources import NODES, Resource
from karpy.settings import Settings

__all__ = [
    "PLUGIN",
    "PRICE_REFRESH",
    "AzurePlugin",
    "PriceRefresher",
    "build_azure_provider",
    "shipped_prices",
]

log = structlog.get_logger("karpy.cloudprovider.azure")

PRICE_REFRESH: Final = 12 * 3600.0
RETRY_AFTER: Final = 300.0


def build_azure_provider(
    settings: Settings,
    *,
    compute: Any,
    network: Any,
    graph: Any,
    nodeclass_of: NodeClassLookup,
    unavailable: AzureUnavailableOfferings | None = None,
    close: Any = None,
    ca_bundle: str = "",
    cluster_version: Callable[[], Awaitable[str]] | None = None,
    kube_dns: KubeDNS | None = None,
) -> AzureCloudProvider:
    """The provider and its parts from the settings and the SDK clients (no API call yet)."""
    az = settings.azure
    instance_types = AzureInstanceTypes(
        compute=compute,
        location=az.location,
        unavailable=unavailable or AzureUnavailableOfferings(),
        prices=shipped_prices(az.location),
        network_plugin=az.network_plugin,
        network_plugin_mode=az.network_plugin_mode,
        vm_memory_overhead_percent=settings.aws.vm_memory_overhead_percent,
    )
    instances = AzureInstances(
        compute=compute,
        network=network,
        graph=graph,
        subscription_id=az.subscription_id,
        resource_group=az.node_resource_group,
        location=az.location,
        cluster_name=settings.cluster_name,
    )
    return AzureCloudProvider(
        nodeclass_of=nodeclass_of,
        instance_types=instance_types,
        instances=instances,
        launch=LaunchSettings(
            cluster_endpoint=settings.aws.cluster_endpoint,
            bootstrap_token=az.kubelet_bootstrap_token,
            ssh_public_key=az.ssh_public_key,
            vnet_subnet_id=az.vnet_subnet_id,
            node_identities=az.node_identities,
            ca_bundle=ca_bundle,
            kubelet_identity_client_id=az.kubelet_identity_client_id,
            admin_username=az.linux_admin_username,
            subscription_id=az.subscription_id,
            location=az.location,
            node_resource_group=az.node_resource_group,
            tenant_id=os.environ.get("AZURE_TENANT_ID", ""),
            network_plugin=az.network_plugin,
            network_plugin_mode=az.network_plugin_mode,
            network_dataplane=az.network_dataplane,
            network_policy=az.network_policy,
            dns_service_ip=az.dns_service_ip,
            additional_tags=az.additional_tags,
        ),
        close=close,
        cluster_version=cluster_version,
        kube_dns=kube_dns,
    )


def shipped_prices(region: str) -> dict[tuple[str, str], float]:
    """The snapshot's prices of `region`, or of `DEFAULT_REGION` as a stand-in (logged)."""
    prices = snapshot_prices(region)
    stand_in = region
    if not prices:
        stand_in = DEFAULT_REGION
        prices = snapshot_prices(DEFAULT_REGION)
    log.info(
        "starting from the shipped Azure prices until the Retail Prices API answers",
        region=region,
        **{"table-region": stand_in, "table-date": snapshot_info()["pricesAsOf"]},
    )
    return prices


def _ca_bundle(path: str | None) -> str:
    """The CA karpy trusts for the apiserver (its kubeconfig's or the service account's), base64,
    for the nodes to trust (`KUBE_CA_CRT`); empty without one."""
    if not path:
        return ""
    try:
        return base64.b64encode(Path(path).read_bytes()).decode()
    except OSError:
        return ""


class PriceRefresher:
    """A runnable: read the region's retail prices now, then every `period` seconds; a failure
    keeps the prices in use (the shipped snapshot until the API first answers) and is retried
    after `retry_after`."""

    def __init__(
        self,
        *,
        instance_types: AzureInstanceTypes,
        endpoint: str,
        period: float = PRICE_REFRESH,
        retry_after: float = RETRY_AFTER,
        ssl: Any = None,
    ) -> None:
        self.instance_types = instance_types
        self.endpoint = endpoint
        self.period = period
        self.retry_after = retry_after
        self.ssl = ssl

    def __repr__(self) -> str:
        return f"PriceRefresher(region={self.instance_types.location!r})"

    async def refresh_once(self) -> bool:
        region = self.instance_types.location
        try:
            async with aiohttp.ClientSession() as session:
                prices = await fetch_prices(
                    session, region=region, endpoint=self.endpoint, ssl=self.ssl
                )
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            log.warning(
                "azure retail prices unavailable; keeping the prices in use", error=str(err)
            )
            return False
        if not prices:
            log.warning("azure retail prices: none for the region", region=region)
            return False
        self.instance_types.set_prices(prices)
        log.info("azure retail prices refreshed", region=region, prices=len(prices))
        return True

    async def start(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            ok = await self.refresh_once()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.period if ok else self.retry_after)


class AzurePlugin:
    """Azure VMs for NodeClaims of AKSNodeClasses."""

    @property
    def name(self) -> str:
        return "azure"

    @property
    def nodeclasses(self) -> tuple[Resource, ...]:
        return (AKSNODECLASSES,)

    def check(self, settings: Settings) -> None:
        az = settings.azure
        missing = [
            env
            for env, value in (
                ("ARM_SUBSCRIPTION_ID", az.subscription_id),
                ("LOCATION", az.location),
                ("AZURE_NODE_RESOURCE_GROUP", az.node_resource_group),
                ("VNET_SUBNET_ID", az.vnet_subnet_id),
            )
            if not value
        ]
        if missing:
            raise ProviderUnavailableError(f"{', '.join(missing)} required with PROVIDER=azure")
        try:
            api_server_name(settings.aws.cluster_endpoint)
        except ValueError as err:
            raise ProviderUnavailableError(str(err)) from None

    async def build(self, settings: Settings, *, client: Client, cache: Cache) -> CloudProvider:
        from azure.identity.aio import DefaultAzureCredential
        from azure.mgmt.compute.aio import ComputeManagementClient
        from azure.mgmt.network.aio import NetworkManagementClient
        from azure.mgmt.resourcegraph.aio import ResourceGraphClient

        az = settings.azure
        credential = DefaultAzureCredential()
        compute = ComputeManagementClient(credential, az.subscription_id, base_url=az.arm_endpoint)
        network = NetworkManagementClient(credential, az.subscription_id, base_url=az.arm_endpoint)
        graph = ResourceGraphClient(credential, base_url=az.arm_endpoint)
        informer = cache.informer(AKSNODECLASSES)

        async def nodeclass_of(name: str) -> AKSNodeClass | None:
            found = informer.get(name)
            if found is None:
                try:
                    found = await client.get(AKSNODECLASSES, name)
                except NotFoundError:
                    return None
            return AKSNodeClass.model_validate(found)

        async def close() -> None:
            for sdk_client in (compute, network, graph):
                await sdk_client.close()
            await credential.close()

        async def kubernetes_version() -> str:
            return str((await client.server_version()).get("gitVersion") or "")

        provider = build_azure_provider(
            settings,
            compute=compute,
            network=network,
            graph=graph,
            nodeclass_of=nodeclass_of,
            close=close,
            ca_bundle=settings.aws.cluster_ca_bundle or _ca_bundle(client.ca_file),
            cluster_version=kubernetes_version,
            kube_dns=KubeDNS(client),
        )
        provider.node_of = cache.informer(NODES).get
        provider.resolver = AKSNodeClassResolver(
            compute=compute,
            network=network,
            location=az.location,
            default_subnet_id=az.vnet_subnet_id,
            kubernetes_version=kubernetes_version,
        )
        return provider

    def register(self, ctx: PluginContext, provider: CloudProvider) -> None:
        if not isinstance(provider, AzureCloudProvider):
            raise TypeError(f"the azure plugin cannot manage NodeClasses of {provider.name!r}")
        if provider.resolver is not None:
            ctx.add(
                AKSNodeClassController(
                    client=ctx.client,
                    nodeclasses=ctx.cache.informer(AKSNODECLASSES),
                    nodeclaims=ctx.cache.informer(NODECLAIMS),
                    resolver=provider.resolver,
                    clock=ctx.clock,
                )
            )
        instances = provider.instances
        ctx.add(
            NICGarbageCollection(
                client=ctx.client,
                network=instances.network,
                compute=instances.compute,
                resource_group=instances.resource_group,
                cluster_name=instances.cluster_name,
                clock=ctx.clock,
            )
        )
        ctx.add_runnable(
            PriceRefresher(
                instance_types=provider.instance_types,
                endpoint=ctx.settings.azure.prices_endpoint,
            ),
            leader_only=False,
        )

    async def close(self, provider: CloudProvider) -> None:
        if isinstance(provider, AzureCloudProvider):
            await provider.close()
            log.info("Azure clients closed")


PLUGIN: Final = AzurePlugin()
