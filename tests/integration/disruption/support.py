"""Test support for in-process controller tests: an async client with a running informer cache
(`Env`) and builders for the objects the NodePool, marking, disruption and metrics controllers read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetest import node_status

from karpy.kube import Informer, Resource
from tests.integration.support import ControllerEnv
from tests.kit import nodeclaim, pod, ready_claim_conditions

JSON = dict[str, Any]
AMD64_ON_DEMAND = (
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
)


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
    """A Node with a providerID, made Ready with allocatable resources through its status.

    The Ready condition's heartbeat is now, as a kubelet's first status would be. The tests
    reuse Node names, and the node lifecycle controller keeps what it knew of a Node whose
    name came back before its next pass (every 2 s) noticed the deletion: it takes the Node as
    alive again only when its heartbeat or Lease changes. A fixed heartbeat equal to the
    previous Node's left the new one judged by the old one's last sign of life, so it was
    marked `Unknown` and tainted `unreachable` seconds after it was made."""
    from karpy.kube import NODES

    meta: JSON = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    if annotations:
        meta["annotations"] = annotations
    spec: JSON = {"providerID": provider_id}
    if taints:
        spec["taints"] = taints
    await env.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec})
    return await env.patch_status(NODES, name, node_status(ready=ready))


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


async def consolidatable_node(
    env: Env, name: str, *, instance_type: str = "c-4x-amd64-linux", pool: str = "pool"
) -> None:
    """An initialized, `Consolidatable` NodeClaim of `instance_type` (on-demand, amd64, in
    test-zone-a) and its Ready Node (4 CPUs allocatable), priced by the kwok catalogue. Its
    providerID is not a kwok one, so the session's `NodeLeases` renews the Node's Lease and it
    stays Ready (no kwok simulator runs here)."""
    from karpy.apis.descriptors import NODECLAIMS

    labels = {
        "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": "test-zone-a",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
    }
    await env.create(NODECLAIMS, nodeclaim(name, pool=pool, labels=labels))
    status = initialized("2026-01-01T00:00:00Z")
    status["conditions"].append(
        {
            "type": "Consolidatable",
            "status": "True",
            "reason": "Consolidatable",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )
    status.update(providerID=f"static://{name}", nodeName=name)
    await env.patch_status(NODECLAIMS, name, status)
    await create_node(
        env,
        name,
        provider_id=f"static://{name}",
        labels={
            **labels,
            "karpenter.sh/nodepool": pool,
            "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true",
        },
    )


def bare_pod(name: str, namespace: str, cpu: str, node: str | None = None, **kw: Any) -> JSON:
    """A pod without an owner (an owner that does not exist would have the garbage collector
    delete it) that tolerates the NoExecute taints the node lifecycle controller puts on these
    kubelet-less nodes, so taint eviction leaves it where it is."""
    return pod(
        name,
        namespace,
        node=node,
        tolerations=[{"operator": "Exists", "effect": "NoExecute"}],
        requests={"cpu": cpu, "memory": "256Mi"},
        **kw,
    )


async def unschedulable(env: Env, namespace: str, name: str, cpu: str) -> JSON:
    """A pending pod as karpy provisions for it (PodScheduled=False, Unschedulable), which
    kube-scheduler leaves alone (another scheduler's), so it stays pending."""
    from karpy.kube import PODS

    await env.client.create(
        PODS,
        bare_pod(name, namespace, cpu, spec={"schedulerName": "elsewhere"}),
        namespace=namespace,
    )
    return await env.client.patch_status(
        PODS,
        name,
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available",
                    }
                ]
            }
        },
        namespace=namespace,
    )


async def untainted(env: Env, names: list[str]) -> None:
    """Until the Nodes `names` carry no taint: the node lifecycle controller taints a new Node
    `not-ready` until it sees the Node's Ready status, and simulations must not see that.

    The controller removes that taint only when a Node update event reaches it and drops the
    attempt when its write conflicts with another (it does not requeue it); and once it has
    marked a Node `Ready: Unknown` (tainted `unreachable`), only the kubelet's next status
    report makes it Ready again. These Nodes have no kubelet, so a Node still tainted after
    10 s gets what a kubelet would post: a Ready condition with a fresh heartbeat."""
    from karpy.kube import NODES

    async def tainted() -> dict[str, list[JSON]]:
        left = {}
        for name in names:
            node = await env.client.get(NODES, name)
            taints = (node.get("spec") or {}).get("taints")
            if taints:
                left[name] = taints
        return left

    for attempt in range(1, 121):
        left = await tainted()
        if not left:
            return
        if attempt % 20 == 0:
            for name in left:
                await env.patch_status(NODES, name, {"conditions": node_status()["conditions"]})
        await asyncio.sleep(0.5)
    raise AssertionError(f"nodes still tainted after 60 s: {left}")
