"""The provider seam: each provider package plugs itself into `karpy run` through one protocol.

A `ProviderPlugin` says which NodeClass kinds it serves, builds its `CloudProvider` from the
settings, and adds its own runnables (kwok: the node/pod simulator; aws: the EC2NodeClass
controller), and closes what it opened when the operator stops. The operator looks a plugin up
by `PROVIDER` in `PLUGINS` and knows nothing else about it. Plugins are imported on first use,
so running kwok never loads the AWS SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Final, Protocol

from karpy.cloudprovider.types import CloudProvider
from karpy.kube.builder import Reconciler
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.clock import Clock
from karpy.kube.events import EventRecorder
from karpy.kube.manager import Runnable
from karpy.kube.resources import Resource
from karpy.settings import Settings

__all__ = [
    "PLUGINS",
    "PluginContext",
    "ProviderPlugin",
    "ProviderUnavailableError",
    "get_plugin",
]


class ProviderUnavailableError(Exception):
    """The configured cloud provider cannot run in this build or with these settings."""


class PluginContext(Protocol):
    """What a plugin may use to add its runnables (`ControllerContext` satisfies it)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def client(self) -> Client: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def cache(self) -> Cache: ...
    @property
    def events(self) -> EventRecorder: ...
    def count_disrupted(self, claim: Mapping[str, Any], reason: str) -> None:
        """Count a NodeClaim the plugin's controllers deleted (nodeclaims_disrupted_total)."""
        ...

    def add(self, reconciler: Reconciler[Any]) -> None: ...
    def add_runnable(self, runnable: Runnable, *, leader_only: bool = True) -> None: ...


class ProviderPlugin(Protocol):
    """One cloud provider as `karpy run` sees it."""

    @property
    def name(self) -> str: ...

    @property
    def nodeclasses(self) -> tuple[Resource, ...]:
        """The NodeClass kinds it serves (Karpenter's `GetSupportedNodeClasses`)."""
        ...

    def check(self, settings: Settings) -> None:
        """Fail fast, before connecting anywhere: raise `ProviderUnavailableError`."""
        ...

    async def build(self, settings: Settings, *, client: Client, cache: Cache) -> CloudProvider:
        """The provider itself, undecorated."""
        ...

    def register(self, ctx: PluginContext, provider: CloudProvider) -> None:
        """Add the provider's own controllers; `provider` is what `build` returned."""
        ...

    async def close(self, provider: CloudProvider) -> None:
        """Release what `build` opened (API clients and their connections); called once, after
        every controller has stopped."""
        ...


PLUGINS: Final[dict[str, str]] = {
    "kwok": "karpy.cloudprovider.kwok.plugin:PLUGIN",
    "aws": "karpy.cloudprovider.aws.plugin:PLUGIN",
    "azure": "karpy.cloudprovider.azure.plugin:PLUGIN",
}
"""`PROVIDER` value -> `module:attribute` of its plugin."""


def get_plugin(name: str) -> ProviderPlugin:
    """The plugin registered as `name` (imported now)."""
    try:
        target = PLUGINS[name]
    except KeyError:
        raise ProviderUnavailableError(
            f"PROVIDER={name}: unknown provider; known: {', '.join(sorted(PLUGINS))}"
        ) from None
    module, _, attribute = target.partition(":")
    plugin: ProviderPlugin = getattr(importlib.import_module(module), attribute)
    return plugin
