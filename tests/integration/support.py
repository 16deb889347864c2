"""What the in-process controller suites share: an environment with a real client and a running
informer cache, in which a test runs controllers until it ends, and builders of the NodeClaims
those controllers read.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubetest import Kubectl, async_wait_until

from karpy.kube import Cache, Client, Informer, Resource, Runnable
from karpy.kube.builder import Reconciler, build

T = TypeVar("T")
E = TypeVar("E", bound="ControllerEnv")
JSON = dict[str, Any]


@dataclass(kw_only=True)
class ControllerEnv:
    """An async client, a running shared informer cache, and the controllers a test started."""

    client: Client
    cache: Cache
    kubectl: Kubectl
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def informer(self, resource: Resource) -> Informer:
        informer = self.cache.informer(resource)
        await asyncio.wait_for(informer.wait_for_sync(), 30)
        return informer

    def run(self, runnable: Runnable | Reconciler[Any]) -> None:
        """Run a reconciler's controller (or anything with `start(stop)`) until the test ends."""
        if not isinstance(runnable, Runnable):
            runnable = build(runnable)
        self._tasks.append(asyncio.create_task(runnable.start(self._stop)))

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

    async def close(self) -> None:
        """Stop the controllers; one that does not finish within 10 s is cancelled."""
        self._stop.set()
        for task in self._tasks:
            try:
                await asyncio.wait_for(task, 10)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()


@contextlib.asynccontextmanager
async def running(env_type: type[E], *, kubeconfig: str, **fields: Any) -> AsyncIterator[E]:
    """An `env_type` connected to the cluster of `kubeconfig`, its informer cache running; the
    controllers stop before the cache and the client close."""
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    env = env_type(client=client, cache=cache, **fields)
    stop = asyncio.Event()
    cache_task = asyncio.create_task(cache.start(stop))
    try:
        yield env
    finally:
        await env.close()
        stop.set()
        await asyncio.wait_for(cache_task, 10)
        await client.close()


# -- builders ---------------------------------------------------------------------------------


def claim_spec(**extra: Any) -> JSON:
    """A NodeClaim spec on the `default` KWOKNodeClass."""
    return {
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
        "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}],
        **extra,
    }


def ready_claim_conditions(stamp: str) -> list[JSON]:
    """The conditions of a NodeClaim that launched, registered and initialized at `stamp`."""
    return [
        {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": stamp}
        for t in ("Launched", "Registered", "Initialized", "Ready")
    ]


def pod(
    name: str,
    namespace: str,
    *,
    node: str | None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: JSON | None = None,
    priority_class: str | None = None,
    tolerations: list[JSON] | None = None,
    grace: int = 30,
    volumes: list[JSON] | None = None,
) -> JSON:
    """A pod of one pause container; bound to `node` unless it is None."""
    meta: JSON = {"name": name, "namespace": namespace, "labels": labels or {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [owner]
    spec: JSON = {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        "terminationGracePeriodSeconds": grace,
    }
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    if tolerations:
        spec["tolerations"] = tolerations
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
