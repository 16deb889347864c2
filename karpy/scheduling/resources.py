"""Resource lists as integer maps, and pod requests as kube-scheduler computes them.

A `ResourceMap` maps a resource name to an integer: CPU in millicores, every other resource in
whole units (bytes for memory and storage, a count for pods and extended resources), rounded up
as the scheduler's `MilliValue()`/`Value()` do. Integers keep every comparison exact and cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from karpy.scheduling.quantity import (
    QuantityError,
    format_bytes,
    format_milli,
    milli_value,
    value,
)

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "ResourceError",
    "ResourceMap",
    "add",
    "fits",
    "format_resources",
    "max_of",
    "parse_resources",
    "pod_requests",
    "subtract",
]

CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"

ResourceMap = dict[str, int]


class ResourceError(ValueError):
    """A resource list holds something that is not a quantity; the message names the field."""


def parse_resources(raw: Mapping[str, Any] | None, *, field: str = "resources") -> ResourceMap:
    """Turn ``{"cpu": "500m", "memory": "1Gi"}`` into ``{"cpu": 500, "memory": 1073741824}``."""
    out: ResourceMap = {}
    if not raw:
        return out
    if not isinstance(raw, Mapping):
        raise ResourceError(f"{field}: expected a map of resource names to quantities")
    for name, amount in raw.items():
        try:
            out[str(name)] = milli_value(amount) if name == CPU else value(amount)
        except QuantityError as err:
            raise ResourceError(f"{field}.{name}: {err}") from None
    return out


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """Print a resource map back as canonical Kubernetes quantities."""
    out: dict[str, str] = {}
    for name in sorted(resources):
        amount = resources[name]
        if name == CPU:
            out[name] = format_milli(amount)
        elif name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-"):
            out[name] = format_bytes(amount)
        else:
            out[name] = str(amount)
    return out


def add(*maps: Mapping[str, int]) -> ResourceMap:
    out: ResourceMap = {}
    for m in maps:
        for name, amount in m.items():
            out[name] = out.get(name, 0) + amount
    return out


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceMap:
    out = dict(a)
    for name, amount in b.items():
        out[name] = out.get(name, 0) - amount
    return out


def max_of(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceMap:
    out = dict(a)
    for name, amount in b.items():
        if amount > out.get(name, 0):
            out[name] = amount
    return out


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """Every requested amount is within what is available (a missing resource is zero)."""
    return all(amount <= available.get(name, 0) for name, amount in requests.items() if amount > 0)


def _container_requests(container: Mapping[str, Any], field: str) -> ResourceMap:
    resources = container.get("resources") or {}
    requests = parse_resources(resources.get("requests"), field=f"{field}.resources.requests")
    # The API server defaults a missing request to the limit; raw manifests lack that step.
    limits = parse_resources(resources.get("limits"), field=f"{field}.resources.limits")
    for name, amount in limits.items():
        requests.setdefault(name, amount)
    return requests


def pod_requests(spec: Mapping[str, Any]) -> ResourceMap:
    """The requests kube-scheduler reserves for a pod spec, plus ``pods: 1``.

    Regular containers run together, so they add up. Init containers run one at a time before
    them, each next to the sidecars (restartable init containers) started before it; sidecars
    keep running with the regular containers. The pod needs the larger of the two phases, plus
    its runtime overhead. Pod-level requests, where given, replace the container totals.
    """
    total: ResourceMap = {}
    for i, container in enumerate(spec.get("containers") or ()):
        total = add(total, _container_requests(container, f"spec.containers[{i}]"))
    sidecars: ResourceMap = {}
    init_peak: ResourceMap = {}
    for i, container in enumerate(spec.get("initContainers") or ()):
        requests = _container_requests(container, f"spec.initContainers[{i}]")
        if container.get("restartPolicy") == "Always":
            total = add(total, requests)
            sidecars = add(sidecars, requests)
            phase = sidecars
        else:
            phase = add(requests, sidecars)
        init_peak = max_of(init_peak, phase)
    result = max_of(total, init_peak)
    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        result.update(parse_resources(pod_level, field="spec.resources.requests"))
    overhead = parse_resources(spec.get("overhead"), field="spec.overhead")
    result = add(result, overhead)
    result[PODS] = result.get(PODS, 0) + 1
    return {k: v for k, v in result.items() if v != 0 or k == PODS}


def sum_requests(items: Iterable[Mapping[str, int]]) -> ResourceMap:
    return add(*items)
