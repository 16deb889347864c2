"""Why a NodePool cannot take a pod: the first reason, and what would make it fit.

`karpy explain pod` asks this for every NodePool; the checks come in the order the scheduler
meets them (`new_capacity`): the NodePool's taints, the pod's node requirements against the
NodePool's (a key with no common value), the instance types left by both (the pod's volume
zones among them), then resources (no type is large enough: the largest is named), the
NodePool's limits, and offerings all under an insufficient-capacity mark. None means the
NodePool could take the pod as far as these say: spread and pod (anti-)affinity depend on the
other pods and are the scheduler's; `from_scheduler` reads the word of the reason the scheduler
gave a NodePool (`SchedulingResult.pool_errors`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from karpy.apis.v1.labels import LABEL_TOPOLOGY_ZONE
from karpy.scheduling.engine.domains import (
    AFFINITY_UNMET,
    ANTI_AFFINITY,
    INVERSE_ANTI_AFFINITY,
    SPREAD_VIOLATED,
)
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import ResourceMap, format_resources
from karpy.scheduling.taints import untolerated

__all__ = ["MISFIT_REASONS", "Misfit", "from_scheduler", "misfit"]

MISFIT_REASONS: Final = (
    "taint",
    "requirement",
    "volume-zone",
    "resources",
    "limits",
    "ice",
    "topology-spread",
    "pod-affinity",
)
_TOPOLOGY: Final = (
    (
        SPREAD_VIOLATED,
        "topology-spread",
        "TopologySpreadConstraint",
        "let the NodePool offer more {key} domains, raise maxSkew, or use "
        "whenUnsatisfiable: ScheduleAnyway",
    ),
    (
        AFFINITY_UNMET,
        "pod-affinity",
        "PodAffinity",
        "run a pod the term selects in a {key} domain the NodePool offers, or relax the term",
    ),
    (
        ANTI_AFFINITY,
        "pod-affinity",
        "PodAntiAffinity",
        "let the NodePool offer a {key} domain without the pods the term selects, or relax it",
    ),
    (
        INVERSE_ANTI_AFFINITY,
        "pod-affinity",
        "PodAntiAffinity",
        "let the NodePool offer a {key} domain the other pods' anti-affinity allows",
    ),
)


@dataclass(frozen=True, slots=True)
class Misfit:
    """The first reason a NodePool cannot take a pod: `reason` (a `MISFIT_REASONS` word),
    the object (`Taint key=value:Effect`, `Requirement key`, `InstanceType name`, `NodePool
    name`), what is wrong and what would make it fit."""

    reason: str
    object: str
    detail: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {
            "reason": self.reason,
            "object": self.object,
            "detail": self.detail,
            "fix": self.fix,
        }


def _fmt(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in format_resources(resources).items())


def _fits(it: InstanceType, requests: Mapping[str, int]) -> bool:
    return all(it.allocatable.get(k, 0) >= v for k, v in requests.items() if v)


def _size(it: InstanceType) -> tuple[int, int, str]:
    return (it.allocatable.get("cpu", 0), it.allocatable.get("memory", 0), it.name)


def _types(template: NodePoolTemplate, reqs: Requirements) -> list[InstanceType]:
    return [it for it in template.instance_types if it.requirements.intersects(reqs) is None]


def _over_limits(
    template: NodePoolTemplate, types: Sequence[InstanceType], usage: Mapping[str, int]
) -> Misfit | None:
    if not template.limits:
        return None
    for name, limit in sorted(template.limits.items()):
        used = usage.get(name, 0)
        if all(used + it.capacity.get(name, 1 if name == "nodes" else 0) > limit for it in types):
            shown = format_resources({name: limit})[name]
            now = format_resources({name: used})[name] if used else "0"
            return Misfit(
                "limits",
                f"NodePool/{template.name}",
                f"limit {name}: {shown} reached (in use {now}); no fitting type stays within it",
                f"raise spec.limits.{name} of NodePool {template.name}, or free some of its nodes",
            )
    return None


def misfit(
    pod: PodView,
    template: NodePoolTemplate,
    *,
    usage: Mapping[str, int] | None = None,
    requests: ResourceMap | None = None,
) -> Misfit | None:
    """The first reason `template` cannot take `pod`, or None. `usage`: what the NodePool's
    nodes already hold (for its limits); `requests`: the pod's requests plus the DaemonSet
    overhead a node must also carry (default: the pod's own)."""
    taint = untolerated(template.taints, pod.tolerations)
    if taint is not None:
        return Misfit(
            "taint",
            f"Taint/{taint}",
            f"the pod does not tolerate taint {taint}",
            f"add a toleration for {taint} to the pod, or remove the taint from the NodePool",
        )
    node_reqs = template.node_requirements
    alternatives = pod.requirement_alternatives()
    last: Misfit | None = None
    for alt in alternatives:
        why = node_reqs.compatible(alt)
        if why is not None:
            key = next(
                (k for k in alt if k in node_reqs and not node_reqs[k].intersects(alt[k])), ""
            )
            from_volume = bool(key) and any(key in v for v in pod.volume_terms)
            if from_volume:
                last = Misfit(
                    "volume-zone",
                    f"Requirement/{key}",
                    f"the pod's volume needs {alt[key].describe()}; the NodePool has "
                    f"{node_reqs[key].describe()}",
                    f"let the NodePool allow {alt[key].describe()}",
                )
            else:
                last = Misfit(
                    "requirement",
                    f"Requirement/{key or why}",
                    f"incompatible requirements, {why}",
                    f"let the NodePool allow {alt[key].describe()}" if key else why,
                )
            continue
        merged = node_reqs.union(alt)
        types = _types(template, merged)
        if not types:
            zonal = alt.get(LABEL_TOPOLOGY_ZONE)
            volume = zonal is not None and any(LABEL_TOPOLOGY_ZONE in v for v in pod.volume_terms)
            keys = ", ".join(alt[k].describe() for k in sorted(alt)) or "none"
            last = Misfit(
                "volume-zone" if volume else "requirement",
                f"Requirement/{LABEL_TOPOLOGY_ZONE if volume else 'instance-types'}",
                f"no instance type of the NodePool meets the pod's requirements ({keys})",
                "relax the pod's node requirements or allow more instance types",
            )
            continue
        need = dict(requests if requests is not None else pod.requests)
        fitting = [it for it in types if _fits(it, need)]
        if not fitting:
            largest = max(types, key=_size)
            last = Misfit(
                "resources",
                f"InstanceType/{largest.name}",
                f"requests {{{_fmt(need)}}} exceed the largest offering {largest.name} "
                f"(allocatable {{{_fmt(largest.allocatable)}}})",
                f"request at most {{{_fmt(largest.allocatable)}}}, or allow larger instance types",
            )
            continue
        over = _over_limits(template, fitting, usage or {})
        if over is not None:
            last = over
            continue
        if not any(o.available and o.compatible(merged) for it in fitting for o in it.offerings):
            names = ", ".join(it.name for it in sorted(fitting, key=_size)[:3])
            last = Misfit(
                "ice",
                f"InstanceType/{sorted(fitting, key=_size)[0].name}",
                f"every fitting offering ({names}, ...) is marked insufficient capacity",
                "wait for the marks to expire (3 minutes) or allow other zones/capacity types",
            )
            continue
        return None
    return last


def from_scheduler(reason: str) -> Misfit | None:
    """The misfit the scheduler's reason for a NodePool names, when it is topology spread or pod
    (anti-)affinity (the object is the term's kind and topology key); None for any other."""
    for prefix, word, kind, fix in _TOPOLOGY:
        if reason.startswith(prefix + " "):
            key = reason[len(prefix) + 1 :].split(" ", 1)[0]
            return Misfit(word, f"{kind}/{key}", reason, fix.format(key=key))
    return None
