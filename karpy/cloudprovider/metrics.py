"""A provider decorator that counts and times every call, so launches can be counted from
outside the process (`karpy_cloudprovider_calls_total{provider,method,outcome}`; tests compare
the `create` count with the number of NodeClaims to prove nothing launched twice).

Outcomes: `success`, or the error's kind (`insufficient_capacity`, `nodeclass_not_ready`,
`not_found`, `create_error`, `error`). Durations go to Karpenter's
`karpenter_cloudprovider_duration_seconds{controller,method,provider}`.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from prometheus_client import Counter, Gauge, Histogram

from karpy.apis.v1 import NodeClaim, NodePool
from karpy.cloudprovider.types import (
    CloudProvider,
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)
from karpy.kube.metrics import REGISTRY
from karpy.scheduling.instancetypes import InstanceType

__all__ = [
    "CALLS",
    "DURATION",
    "ERRORS",
    "INSTANCE_TYPE_CPU",
    "INSTANCE_TYPE_MEMORY",
    "OFFERING_AVAILABLE",
    "OFFERING_PRICE",
    "MetricsCloudProvider",
    "outcome_of",
]

T = TypeVar("T")

CALLS = Counter(
    "karpy_cloudprovider_calls_total",
    "Calls to the cloud provider, by provider, method and outcome",
    ["provider", "method", "outcome"],
    registry=REGISTRY,
)
DURATION = Histogram(
    "karpenter_cloudprovider_duration_seconds",
    "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
    ["controller", "method", "provider"],
    registry=REGISTRY,
)

ERRORS = Counter(
    "karpenter_cloudprovider_errors_total",
    "Total number of errors returned from CloudProvider calls.",
    ["controller", "method", "provider", "error"],
    registry=REGISTRY,
)
INSTANCE_TYPE_CPU = Gauge(
    "karpenter_cloudprovider_instance_type_cpu_cores",
    "VCPUs cores for a given instance type.",
    ["instance_type"],
    registry=REGISTRY,
)
INSTANCE_TYPE_MEMORY = Gauge(
    "karpenter_cloudprovider_instance_type_memory_bytes",
    "Memory, in bytes, for a given instance type.",
    ["instance_type"],
    registry=REGISTRY,
)
OFFERING_AVAILABLE = Gauge(
    "karpenter_cloudprovider_instance_type_offering_available",
    "Instance type offering availability, based on instance type, capacity type, and zone",
    ["instance_type", "capacity_type", "zone"],
    registry=REGISTRY,
)
OFFERING_PRICE = Gauge(
    "karpenter_cloudprovider_instance_type_offering_price_estimate",
    "Instance type offering estimated hourly price used when making informed decisions on node "
    "cost calculation, based on instance type, capacity type, and zone.",
    ["instance_type", "capacity_type", "zone"],
    registry=REGISTRY,
)


def record_instance_types(types: builtins.list[InstanceType]) -> None:
    """Karpenter's per-type and per-offering gauges, from the catalogue a call returned."""
    for t in types:
        INSTANCE_TYPE_CPU.labels(t.name).set(t.capacity.get("cpu", 0) / 1000)
        INSTANCE_TYPE_MEMORY.labels(t.name).set(t.capacity.get("memory", 0))
        for o in t.offerings:
            OFFERING_AVAILABLE.labels(t.name, o.capacity_type, o.zone).set(
                1.0 if o.available else 0.0
            )
            OFFERING_PRICE.labels(t.name, o.capacity_type, o.zone).set(o.price)


def outcome_of(error: BaseException | None) -> str:
    if error is None:
        return "success"
    if isinstance(error, InsufficientCapacityError):
        return "insufficient_capacity"
    if isinstance(error, NodeClassNotReadyError):
        return "nodeclass_not_ready"
    if isinstance(error, NodeClaimNotFoundError):
        return "not_found"
    if isinstance(error, CreateError):
        return "create_error"
    return "error"


class MetricsCloudProvider:
    """Wraps any `CloudProvider`; behaves exactly like it, plus metrics."""

    def __init__(self, inner: CloudProvider) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    async def _observe(self, method: str, call: Callable[[], Awaitable[T]]) -> T:
        controller = str(structlog.contextvars.get_contextvars().get("controller", ""))
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            return await call()
        except Exception as exc:
            error = exc
            raise
        finally:
            DURATION.labels(controller, method, self.name).observe(time.perf_counter() - started)
            CALLS.labels(self.name, method, outcome_of(error)).inc()
            if error is not None:
                ERRORS.labels(controller, method, self.name, type(error).__name__).inc()

    async def create(self, claim: NodeClaim) -> NodeClaim:
        return await self._observe("create", lambda: self.inner.create(claim))

    async def delete(self, claim: NodeClaim) -> None:
        await self._observe("delete", lambda: self.inner.delete(claim))

    async def get(self, provider_id: str) -> NodeClaim:
        return await self._observe("get", lambda: self.inner.get(provider_id))

    async def list(self) -> builtins.list[NodeClaim]:
        return await self._observe("list", self.inner.list)

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        types = await self._observe(
            "get_instance_types", lambda: self.inner.get_instance_types(nodepool)
        )
        record_instance_types(types)
        return types

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        return await self._observe("is_drifted", lambda: self.inner.is_drifted(claim))

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return self.inner.repair_policies()
