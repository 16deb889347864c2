"""The AWS provider's plugin: EC2NodeClass and the EC2 cloud provider."""

from __future__ import annotations

from typing import Final

from karpy.apis.descriptors import EC2NODECLASSES
from karpy.cloudprovider.registry import PluginContext, ProviderUnavailableError
from karpy.cloudprovider.types import CloudProvider
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.resources import Resource
from karpy.settings import Settings

__all__ = ["PLUGIN", "AWSPlugin"]


class AWSPlugin:
    """EC2 instances for NodeClaims of EC2NodeClasses."""

    @property
    def name(self) -> str:
        return "aws"

    @property
    def nodeclasses(self) -> tuple[Resource, ...]:
        return (EC2NODECLASSES,)

    def check(self, settings: Settings) -> None:
        raise ProviderUnavailableError(
            "PROVIDER=aws: the AWS provider is not available in this build yet; "
            "use PROVIDER=kwok for local clusters"
        )

    async def build(self, settings: Settings, *, client: Client, cache: Cache) -> CloudProvider:
        raise ProviderUnavailableError("PROVIDER=aws: not available in this build yet")

    def register(self, ctx: PluginContext, provider: CloudProvider) -> None:
        return None


PLUGIN: Final = AWSPlugin()
