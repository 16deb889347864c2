"""The kwok provider's plugin: KWOKNodeClass, the kwok catalogue, and the node/pod simulator."""

from __future__ import annotations

from typing import Final

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS
from karpy.cloudprovider.kwok.catalog import kwok_instance_types, load_kwok_catalog
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.cloudprovider.kwok.simulator import KwokSimulator
from karpy.cloudprovider.registry import PluginContext, ProviderUnavailableError
from karpy.cloudprovider.types import CloudProvider
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.resources import Resource
from karpy.scheduling.catalog import CatalogError
from karpy.scheduling.instancetypes import InstanceType
from karpy.settings import Settings

__all__ = ["PLUGIN", "KwokPlugin", "instance_types"]


def instance_types(settings: Settings) -> list[InstanceType]:
    """The kwok catalogue: INSTANCE_TYPES_FILE_PATH if set, else the built-in 144 types."""
    path = settings.kwok.instance_types_file_path
    if path is None:
        return kwok_instance_types()
    try:
        return load_kwok_catalog(path)
    except CatalogError as exc:
        raise ProviderUnavailableError(f"INSTANCE_TYPES_FILE_PATH: {exc}") from None


class KwokPlugin:
    """Fake nodes in the cluster itself; karpy plays their kubelets on the leader."""

    @property
    def name(self) -> str:
        return "kwok"

    @property
    def nodeclasses(self) -> tuple[Resource, ...]:
        return (KWOKNODECLASSES,)

    def check(self, settings: Settings) -> None:
        instance_types(settings)

    async def build(self, settings: Settings, *, client: Client, cache: Cache) -> CloudProvider:
        return KwokCloudProvider(
            client=client,
            cache=cache,
            instance_types=instance_types(settings),
            node_overlays=settings.feature_gates.node_overlay,
        )

    def register(self, ctx: PluginContext, provider: CloudProvider) -> None:
        if not isinstance(provider, KwokCloudProvider):
            raise TypeError(f"the kwok plugin cannot simulate nodes of {provider.name!r}")
        # The simulator stands in for the kubelets of every kwok node: its requests get their
        # own budget, so marking a thousand pods Running does not slow karpy's own calls.
        client = ctx.client
        simulator_client = Client(
            client.transport,
            qps=ctx.settings.kube_client.qps,
            burst=ctx.settings.kube_client.burst,
            host=client.host,
        )
        simulator = KwokSimulator(
            client=simulator_client,
            cache=ctx.cache,
            provider=provider,
            nodeclaims=NODECLAIMS,
            clock=ctx.clock,
        )
        for reconciler in simulator.reconcilers():
            ctx.add(reconciler)

    async def close(self, provider: CloudProvider) -> None:
        """Nothing to release: the kwok provider uses karpy's own Kubernetes client."""


PLUGIN: Final = KwokPlugin()
