"""Test support for in-process controller tests: an async client with a running informer cache
(`Env`) and builders for the objects the NodePool, marking, disruption and metrics controllers read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubetest import Kubectl, async_wait_until

from karpy.kube import Cache, Client, Controller, Informer, Resource

T = TypeVar("T")
JSON = dict[str, Any]


@dataclass
class Env:
    """An async client and a running shared informer cache."""

    client: Client
    cache: Cache
    kubectl: Kubectl
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def informer(self, resource: Resource) -> Informer:
        informer = self.cache.informer(resource)
        await asyncio.wait_for(informer.wait_for_sync(), 30)
        return informer

    def run(self, controller: Controller[Any]) -> None:
        """Run a controller until the test ends."""
        self._tasks.append(asyncio.create_task(controller.start(self._stop)))

    async def until(
        self,
        predicate: Callable[[], Awaitable[T | None]] | Callable[[], T | None],
        *,
        timeout: float = 30.0,  # noqa: ASYNC109 - a polling deadline
        message: str = "condition",
    ) -> T:
        async def check() -> T | None:
            value = predicate()
            if asyncio.iscoroutine(value):
                return await value  # type: ignore[no-any-return]
            return value  # type: ignore[return-value]

        return await async_wait_until(check, timeout=timeout, interval=0.1, message=message)

    async def cached(
        self,
        informer: Informer,
        name: str,
        check: Callable[[JSON], bool],
        *,
        timeout: float = 30,  # noqa: ASYNC109
    ) -> JSON:
        """Wait until the cached object `name` satisfies `check`, and return it."""

        def probe() -> JSON | None:
            obj = informer.get(name)
            return obj if obj is not None and check(obj) else None

        return await self.until(probe, timeout=timeout, message=f"{name} in cache to match")

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> JSON:
        return await self.client.get(resource, name, namespace=namespace)

    async def create(self, resource: Resource, obj: JSON) -> JSON:
        return await self.client.create(resource, obj)

    async def patch_status(self, resource: Resource, name: str, status: JSON) -> JSON:
        return await self.client.patch_status(resource, name, {"status": status})


# -- builders -------------------------------------------------------------------------------------


def kwok_nodeclass(name: str = "default") -> JSON:
    return {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": name},
        "spec": {},
    }


def nodepool(
    name: str = "pool",
    *,
    nodeclass: str = "default",
    kind: str = "KWOKNodeClass",
    group: str = "karpenter.kwok.sh",
    consolidate_after: str = "30s",
    policy: str = "WhenEmpty",
    budgets: list[JSON] | None = None,
    taints: list[JSON] | None = None,
    startup_taints: list[JSON] | None = None,
) -> JSON:
    spec: JSON = {
        "nodeClassRef": {"group": group, "kind": kind, "name": nodeclass},
        "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}],
    }
    if taints:
        spec["taints"] = taints
    if startup_taints:
        spec["startupTaints"] = startup_taints
    disruption: JSON = {"consolidationPolicy": policy, "consolidateAfter": consolidate_after}
    if budgets is not None:
        disruption["budgets"] = budgets
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": spec}, "disruption": disruption},
    }


def nodeclaim(name: str, *, pool: str = "pool", annotations: dict[str, str] | None = None) -> JSON:
    meta: JSON = {"name": name, "labels": {"karpenter.sh/nodepool": pool}}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": meta,
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}],
        },
    }


def conditions(obj: JSON) -> dict[str, JSON]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def status_of(obj: JSON, type_: str) -> str | None:
    found = conditions(obj).get(type_)
    return None if found is None else str(found["status"])


def initialized(at: str) -> JSON:
    """NodeClaim status conditions of a launched, registered and initialized NodeClaim."""
    return {
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": at}
            for t in ("Launched", "Registered", "Initialized", "Ready")
        ]
    }


async def create_node(
    env: Env,
    name: str,
    *,
    provider_id: str,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    taints: list[JSON] | None = None,
    ready: bool = True,
) -> JSON:
    """A Node with a providerID, made Ready with allocatable resources through its status."""
    from karpy.kube import NODES

    now = "2026-01-01T00:00:00Z"
    meta: JSON = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    if annotations:
        meta["annotations"] = annotations
    spec: JSON = {"providerID": provider_id}
    if taints:
        spec["taints"] = taints
    await env.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec})
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return await env.patch_status(
        NODES,
        name,
        {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady",
                    "message": "fake node",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        },
    )


HOLD: str = "test.karpy.sh/hold"
"""A finalizer tests put on NodeClaims to keep deleted ones around (nothing removes it)."""


async def managed_node(
    env: Env,
    name: str,
    *,
    pool: str = "pool",
    consolidatable: bool = True,
    hold: bool = False,
    node_annotations: dict[str, str] | None = None,
) -> None:
    """A NodeClaim (launched, registered, initialized, maybe Consolidatable) and its Ready Node,
    as karpy's lifecycle leaves them."""
    from karpy.state.resources import NODECLAIMS

    provider_id = f"kwok://{name}"
    claim = nodeclaim(name, pool=pool)
    claim["metadata"]["labels"]["karpenter.sh/capacity-type"] = "on-demand"
    claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "c-1x-amd64-linux"
    if hold:
        claim["metadata"]["finalizers"] = [HOLD]
    await env.create(NODECLAIMS, claim)
    status = initialized("2026-01-01T00:00:00Z")
    if consolidatable:
        status["conditions"].append(
            {
                "type": "Consolidatable",
                "status": "True",
                "reason": "Consolidatable",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        )
    status.update(providerID=provider_id, nodeName=name)
    await env.patch_status(NODECLAIMS, name, status)
    await create_node(
        env,
        name,
        provider_id=provider_id,
        labels={
            "karpenter.sh/nodepool": pool,
            "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true",
            "karpenter.sh/capacity-type": "on-demand",
            "node.kubernetes.io/instance-type": "c-1x-amd64-linux",
        },
        annotations=node_annotations,
    )
