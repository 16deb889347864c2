"""What every controller is built from: one object the operator fills in and hands to each
area's `register(ctx)`.

Controller classes still take their dependencies as keyword arguments (so integration tests can
build them in-process against a real apiserver with a fake clock); the context is only the bag
`register` functions pick from. Informers are shared: `ctx.informer(PODS)` returns the one
informer of the process. Controllers added with `ctx.add_controller` run only on the elected
leader; informers and the cluster state run on every replica.
"""

from __future__ import annotations

from dataclasses import dataclass

from karpy.cloudprovider.types import CloudProvider
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.clock import Clock
from karpy.kube.events import EventRecorder
from karpy.kube.informer import Informer
from karpy.kube.manager import Manager, Runnable
from karpy.kube.resources import Resource
from karpy.settings import Settings
from karpy.state import Cluster
from karpy.state.nodepoolhealth import NodePoolHealth

__all__ = ["ControllerContext"]


@dataclass(slots=True, kw_only=True)
class ControllerContext:
    """Settings, API access, time, the cloud and the cluster model, for building controllers."""

    settings: Settings
    client: Client
    manager: Manager
    events: EventRecorder
    clock: Clock
    cloud_provider: CloudProvider
    cluster: Cluster
    identity: str = ""

    @property
    def cache(self) -> Cache:
        """The shared informer cache."""
        return self.manager.cache

    @property
    def nodepool_health(self) -> NodePoolHealth:
        """Launch/registration outcomes per NodePool, held by the cluster state: the NodeClaim
        lifecycle records them, `nodepool.registrationhealth` reports them."""
        return self.cluster.nodepool_health

    def informer(self, resource: Resource) -> Informer:
        """The process's shared informer of `resource` (created on first use)."""
        return self.manager.cache.informer(resource)

    def add_controller(self, runnable: Runnable, *, leader_only: bool = True) -> None:
        """Run `runnable` with the manager: on the leader only unless told otherwise."""
        self.manager.add(runnable, leader_only=leader_only)
