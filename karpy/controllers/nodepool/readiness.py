"""`nodepool.readiness`: is the NodePool's NodeClass there, alive and Ready (`NodeClassReady`)?

The message names the NodeClass by kind and name, so `kubectl describe nodepool` says exactly
what is missing. A nodeClassRef to a kind the running provider does not serve is reported the
same way rather than ignored, since karpy runs one provider.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final

from karpy.apis.objects import get_condition, is_deleting
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1 import group_of_ref
from karpy.controllers.nodepool.ready import write_ready_dependent
from karpy.controllers.nodepool.resources import nodeclass_resource
from karpy.kube import Client, Clock, Informer, RealClock, Resource, Result
from karpy.kube.builder import Builder

__all__ = ["NAME", "NodeClassCheck", "NodePoolReadinessController", "nodeclass_ref", "pools_using"]

NAME = "nodepool.readiness"
REASON_NODECLASS_READINESS_UNKNOWN = "NodeClassReadinessUnknown"
REASON_NODECLASS_NOT_SUPPORTED = "NodeClassNotSupported"

JSON = dict[str, Any]


def nodeclass_ref(pool: Mapping[str, Any]) -> tuple[str, str, str]:
    """(group, kind, name) of a raw NodePool's nodeClassRef."""
    spec = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    ref = spec.get("nodeClassRef") or {}
    return group_of_ref(ref), str(ref.get("kind", "")), str(ref.get("name", ""))


def pools_using(
    nodepools: Informer, nodeclass: Mapping[str, Any], *, resource: Resource
) -> list[str]:
    """Names of the NodePools whose nodeClassRef points at `nodeclass` (of kind `resource`)."""
    group, kind = resource.group, resource.kind
    name = str((nodeclass.get("metadata") or {}).get("name", ""))
    return [
        str((p.get("metadata") or {}).get("name"))
        for p in nodepools.list()
        if nodeclass_ref(p) == (group, kind, name)
    ]


class NodeClassCheck:
    """Finds a NodePool's NodeClass in the cache of the kinds the provider supports."""

    def __init__(self, nodeclasses: Mapping[Resource, Informer]) -> None:
        self.nodeclasses = dict(nodeclasses)

    @property
    def supported(self) -> Sequence[Resource]:
        return list(self.nodeclasses)

    def watch(self, builder: Builder[str], nodepools: Informer) -> None:
        """Wake the controller for the NodePools that reference a NodeClass when it changes."""
        for resource, informer in self.nodeclasses.items():
            builder.watches(
                informer, mapper=functools.partial(pools_using, nodepools, resource=resource)
            )

    def find(self, pool: Mapping[str, Any]) -> tuple[Resource | None, JSON | None]:
        group, kind, name = nodeclass_ref(pool)
        resource = nodeclass_resource(group, kind, supported=self.nodeclasses)
        if resource is None:
            return None, None
        return resource, self.nodeclasses[resource].get(name)

    def verdict(self, pool: Mapping[str, Any]) -> tuple[str, str, str]:
        """(status, reason, message) of `NodeClassReady` for `pool`."""
        group, kind, name = nodeclass_ref(pool)
        resource, nodeclass = self.find(pool)
        if resource is None:
            served = ", ".join(f"{r.kind}.{r.group}" for r in self.supported) or "none"
            return (
                cond.STATUS_FALSE,
                REASON_NODECLASS_NOT_SUPPORTED,
                f"NodeClass kind {kind}.{group} is not supported by this provider "
                f"(supported: {served})",
            )
        if nodeclass is None:
            return (
                cond.STATUS_FALSE,
                cond.REASON_NODECLASS_NOT_FOUND,
                f"NodeClass {kind}/{name} ({group}) not found on cluster",
            )
        if is_deleting(nodeclass):
            return (
                cond.STATUS_FALSE,
                cond.REASON_NODECLASS_TERMINATING,
                f"NodeClass {kind}/{name} is terminating",
            )
        ready = get_condition(nodeclass, cond.NODECLASS_READY)
        if ready is None or ready.get("status") == cond.STATUS_UNKNOWN:
            return (
                cond.STATUS_FALSE,
                REASON_NODECLASS_READINESS_UNKNOWN,
                f"NodeClass {kind}/{name} readiness unknown",
            )
        if ready.get("status") == cond.STATUS_FALSE:
            return (
                cond.STATUS_FALSE,
                str(ready.get("reason") or cond.REASON_NODECLASS_NOT_READY),
                str(ready.get("message") or f"NodeClass {kind}/{name} is not ready"),
            )
        return cond.STATUS_TRUE, cond.NODEPOOL_NODECLASS_READY, ""


class NodePoolReadinessController:
    """Sets `NodeClassReady` (and re-derives `Ready`) when a NodePool or a NodeClass changes."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodepools: Informer,
        nodeclasses: Mapping[Resource, Informer],
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodepools = nodepools
        self.check = NodeClassCheck(nodeclasses)
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools).workers(10).log_kind("NodePool")
        self.check.watch(builder, self.nodepools)

    async def reconcile(self, name: str) -> Result | None:
        pool = self.nodepools.get(name)
        if pool is None:
            return None
        status, reason, message = self.check.verdict(pool)
        return await write_ready_dependent(
            self.client,
            pool,
            type_=cond.NODEPOOL_NODECLASS_READY,
            status=status,
            now=self.clock.wall(),
            reason=reason,
            message=message,
        )
