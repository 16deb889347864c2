"""What every controller is built from: one object `karpy run` fills in and hands to each
area's `register(ctx)`.

Reconcilers take their dependencies as keyword arguments (so integration tests can build them
in-process against a real apiserver with a fake clock) and declare their watches in
`setup(builder)` (`karpy.kube.builder`); `ctx.add(reconciler)` builds the controller and adds it
to the manager. Informers are shared: `ctx.informer(PODS)` returns the one informer of the
process. Controllers run on the elected leader unless their `setup` says otherwise; informers
and the cluster state run on every replica.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.common.metrics import count_disrupted
from karpy.kube.builder import Reconciler, build
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
    """Settings, API access, time, the cloud and the cluster model, for building controllers.

    `identity` is this replica's leader-election identity."""

    settings: Settings
    client: Client
    manager: Manager
    events: EventRecorder
    clock: Clock
    cloud_provider: CloudProvider
    cluster: Cluster
    nodeclasses: tuple[Resource, ...] = ()
    """The NodeClass kinds the running provider serves (its plugin says which)."""
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

    def count_disrupted(self, claim: Mapping[str, Any], reason: str) -> None:
        """Count a NodeClaim deleted by a provider's controller (interruption)."""
        count_disrupted(claim, reason)

    def add(self, reconciler: Reconciler[Any]) -> None:
        """Build `reconciler`'s controller and run it with the manager."""
        self.manager.add(build(reconciler))

    def add_runnable(self, runnable: Runnable, *, leader_only: bool = True) -> None:
        """Run something that is not a reconcile loop (the metrics reporter, the event
        recorder) with the manager: on the leader only unless told otherwise."""
        self.manager.add(runnable, leader_only=leader_only)
