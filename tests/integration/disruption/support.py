"""Test support for in-process controller tests: an async client with a running informer cache
(`Env`) and builders for the objects the NodePool, marking, disruption and metrics controllers read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetest import node_status

from karpy.kube import Informer, Resource
from tests.integration.support import ControllerEnv
from tests.kit import nodeclaim, ready_claim_conditions

JSON = dict[str, Any]


@dataclass(kw_only=True)
class Env(ControllerEnv):
    """The shared environment, with short forms of the reads and writes these tests make."""

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


def initialized(at: str) -> JSON:
    """NodeClaim status conditions of a launched, registered and initialized NodeClaim."""
    return {"conditions": ready_claim_conditions(at)}


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

    meta: JSON = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    if annotations:
        meta["annotations"] = annotations
    spec: JSON = {"providerID": provider_id}
    if taints:
        spec["taints"] = taints
    await env.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec})
    return await env.patch_status(
        NODES, name, node_status(ready=ready, stamp="2026-01-01T00:00:00Z")
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
    from karpy.apis.descriptors import NODECLAIMS

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
