"""What a static NodePool (`spec.replicas`) owns, and the NodeClaim it launches for a missing node.

A static NodePool's nodes are not planned for pods: each new one is the NodePool's template as
it is, listing every instance type the requirements allow (cheapest first, at most
`MAX_INSTANCE_TYPES`), with no resource requests, as Karpenter's static NodeClaim template.
Both the static capacity controller (scale up) and the `StaticDrift` disruption method (a
drifted node's replacement) launch these.

The counts follow Karpenter's `NodePoolState`: a NodeClaim is *deleting* when it is being
deleted or a disruption command has taken it (its replacement is on its way), *running*
otherwise; `total` (running + deleting) is what the node limit and scale-up compare with
`replicas`, `running` what scale-down compares with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from karpy.apis.objects import is_deleting
from karpy.apis.v1 import labels
from karpy.controllers.disruption.orchestration.marks import ANNOTATION_COMMAND, annotation
from karpy.scheduling.engine.model import NewNodeClaim, NodePoolTemplate
from karpy.scheduling.instancetypes import InstanceType, order_by_price
from karpy.scheduling.requirements import Requirement
from karpy.scheduling.resources import parse_resources

__all__ = [
    "MAX_INSTANCE_TYPES",
    "NodeCounts",
    "is_static",
    "node_limit",
    "nodepool_counts",
    "static_nodeclaim",
]

JSON = dict[str, Any]
MAX_INSTANCE_TYPES: Final = 60
"""As Karpenter's `MaxInstanceTypes`: how many instance types a NodeClaim lists at most."""


def is_static(nodepool: Mapping[str, Any] | None) -> bool:
    return ((nodepool or {}).get("spec") or {}).get("replicas") is not None


def replicas_of(nodepool: Mapping[str, Any]) -> int:
    return int((nodepool.get("spec") or {}).get("replicas") or 0)


def node_limit(nodepool: Mapping[str, Any]) -> int | None:
    """`spec.limits.nodes`, or None when unlimited."""
    raw = (nodepool.get("spec") or {}).get("limits") or {}
    if "nodes" not in raw:
        return None
    return parse_resources({"nodes": raw["nodes"]}, field="spec.limits").get("nodes", 0)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


@dataclass(frozen=True, slots=True)
class NodeCounts:
    """A static NodePool's NodeClaims: `running` (names, not deleting nor being disrupted) and
    `deleting` (names)."""

    running: tuple[str, ...]
    deleting: tuple[str, ...]

    @property
    def total(self) -> int:
        return len(self.running) + len(self.deleting)


def nodepool_counts(
    nodepool: str,
    nodeclaims: Iterable[Mapping[str, Any]],
    *,
    marked: Iterable[str] = (),
) -> NodeCounts:
    """Count `nodepool`'s NodeClaims; `marked` names NodeClaims known to be going (a command
    took them, or karpy deleted them, before the cache shows it)."""
    going = set(marked)
    running: list[str] = []
    deleting: list[str] = []
    for claim in nodeclaims:
        if ((claim.get("metadata") or {}).get("labels") or {}).get(
            labels.LABEL_NODEPOOL
        ) != nodepool:
            continue
        name = _name(claim)
        if is_deleting(claim) or name in going or annotation(claim, ANNOTATION_COMMAND):
            deleting.append(name)
        else:
            running.append(name)
    return NodeCounts(running=tuple(sorted(running)), deleting=tuple(sorted(deleting)))


def static_nodeclaim(
    nodepool: Mapping[str, Any], instance_types: Sequence[InstanceType]
) -> NewNodeClaim | None:
    """The NodeClaim of one more node of a static NodePool, or None when no instance type
    satisfies its requirements with an available offering."""
    template = NodePoolTemplate.from_nodepool(nodepool, instance_types)
    reqs = template.node_requirements
    fitting = [
        t
        for t in instance_types
        if t.requirements.intersects(reqs) is None and t.cheapest_offering(reqs) is not None
    ]
    types = order_by_price(fitting, reqs)[:MAX_INSTANCE_TYPES]
    if not types:
        return None
    type_req = reqs.get(labels.LABEL_INSTANCE_TYPE)
    reqs = reqs.without(labels.LABEL_INSTANCE_TYPE).add(
        Requirement(
            labels.LABEL_INSTANCE_TYPE,
            complement=False,
            values=tuple(t.name for t in types),
            min_values=type_req.min_values if type_req else None,
        )
    )
    capacity_types = sorted(
        {o.capacity_type for t in types for o in t.offerings if o.available and o.compatible(reqs)}
    )
    ct_req = reqs.get(labels.LABEL_CAPACITY_TYPE)
    reqs = reqs.without(labels.LABEL_CAPACITY_TYPE).add(
        Requirement(
            labels.LABEL_CAPACITY_TYPE,
            complement=False,
            values=tuple(capacity_types),
            min_values=ct_req.min_values if ct_req else None,
        )
    )
    node_labels = dict(template.labels)
    node_labels[labels.LABEL_NODEPOOL] = template.name
    node_labels.update(reqs.labels())
    return NewNodeClaim(
        nodepool=template.name,
        requirements=reqs,
        instance_types=types,
        requests={},
        pods=[],
        offering=types[0].cheapest_offering(reqs),
        labels=node_labels,
        taints=template.taints,
        startup_taints=template.startup_taints,
    )
