"""Small builders for raw pods, templates and nodes used by the scheduling tests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.scheduling.engine.model import ExistingNode, NodePoolTemplate
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.pods import PodView, pod_view
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.taints import Taint

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"

CAPACITY_TYPES = ("on-demand", "spot")
# (vCPU, GiB) shapes random catalogues draw six types from
SHAPES = ((1, 2), (2, 4), (2, 8), (4, 8), (4, 16), (8, 16), (8, 32), (16, 32), (16, 64))
GI = 1024**3

_KWOK: list[InstanceType] | None = None


def kwok() -> list[InstanceType]:
    global _KWOK
    if _KWOK is None:
        _KWOK = kwok_instance_types()
    return _KWOK


def linux_amd64() -> list[InstanceType]:
    return [t for t in kwok() if t.name.endswith("-amd64-linux")]


def random_catalogue(
    rng: random.Random,
    *,
    zones: Sequence[str],
    shapes: Sequence[tuple[int, int]] = SHAPES,
    prefix: str = "t",
) -> list[InstanceType]:
    """Six types drawn from `shapes`, on-demand and spot in every zone, prices proportional to
    size with a memory premium, spot at 40 %, each perturbed by up to 10 %, and about one offering
    in ten unavailable: a catalogue where the cheapest plan is not obvious."""
    return [
        InstanceType(
            name=f"{prefix}{i}",
            capacity={"cpu": cpu * 1000, "memory": mem * GI, "pods": 110},
            overhead={"cpu": 80, "memory": GI // 4},
            offerings=[
                Offering(
                    zone=zone,
                    capacity_type=ct,
                    price=round(
                        cpu
                        * (0.03 + 0.005 * mem / cpu)
                        * (0.4 if ct == "spot" else 1.0)
                        * rng.uniform(0.9, 1.1),
                        6,
                    ),
                    available=rng.random() > 0.1,
                )
                for zone in zones
                for ct in CAPACITY_TYPES
            ],
        )
        for i, (cpu, mem) in enumerate(rng.sample(list(shapes), 6))
    ]


def raw_pod(
    name: str,
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}, "uid": name},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
            **spec,
        },
    }


def pod(name: str, **kw: Any) -> PodView:
    return pod_view(raw_pod(name, **kw))


def pods(prefix: str, n: int, **kw: Any) -> list[PodView]:
    return [pod(f"{prefix}-{i}", **kw) for i in range(n)]


def anti_affinity(key: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
            ]
        }
    }


def affinity(key: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
            ]
        }
    }


def spread(
    key: str, labels: dict[str, str], *, skew: int = 1, when: str = "DoNotSchedule"
) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": labels},
        }
    ]


def template(
    name: str = "default",
    *,
    types: list[InstanceType] | None = None,
    requirements: list[dict[str, Any]] | None = None,
    weight: int = 0,
    taints: list[dict[str, str]] | None = None,
    limits: dict[str, int] | None = None,
    labels: dict[str, str] | None = None,
) -> NodePoolTemplate:
    return NodePoolTemplate(
        name=name,
        weight=weight,
        requirements=Requirements.from_node_selector_terms(requirements or []),
        labels=labels or {},
        taints=tuple(Taint.from_dict(t) for t in taints or []),
        instance_types=types if types is not None else linux_amd64(),
        limits=limits,
    )


def node(
    name: str,
    *,
    cpu: int = 4000,
    memory: int = 16 * 1024**3,
    pods_: list[PodView] | None = None,
    labels: dict[str, str] | None = None,
    initialized: bool = True,
    taints: list[dict[str, str]] | None = None,
) -> ExistingNode:
    return ExistingNode(
        name=name,
        labels={HOSTNAME: name, ZONE: "test-zone-a", **(labels or {})},
        allocatable={"cpu": cpu, "memory": memory, "pods": 110},
        pods=pods_ or [],
        initialized=initialized,
        taints=tuple(Taint.from_dict(t) for t in taints or []),
    )
