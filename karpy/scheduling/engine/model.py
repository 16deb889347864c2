"""The scheduler's inputs and outputs as plain data.

The provisioner builds a `SchedulingInput` from a snapshot of cluster state and calls
`karpy.scheduling.schedule`; `karpy simulate` builds the same from manifests. Everything here is
built once and only read by the engine, so the same snapshot can be scheduled from a worker
thread while the event loop keeps running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from karpy.apis.v1.labels import (
    EPHEMERAL_TAINT_PREFIX,
    LABEL_HOSTNAME,
    LABEL_NODE_INITIALIZED,
    LABEL_NODE_REGISTERED,
    LABEL_NODEPOOL,
    TAINT_NOT_READY_KEY,
    TAINT_UNINITIALIZED_KEY,
    TAINT_UNREACHABLE_KEY,
    TAINT_UNREGISTERED_KEY,
)
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import ResourceMap, parse_resources
from karpy.scheduling.taints import Taint

__all__ = [
    "ExistingNode",
    "NewNodeClaim",
    "NodePoolTemplate",
    "SchedulingInput",
    "SchedulingResult",
]

PreferencePolicy = Literal["Respect", "Ignore"]
MinValuesPolicy = Literal["Strict", "BestEffort"]
MAX_INSTANCE_TYPES = 600

# Taints that come and go while a node boots; Karpenter ignores them on nodes not initialized yet.
_TRANSIENT_TAINTS = frozenset(
    {TAINT_NOT_READY_KEY, TAINT_UNREACHABLE_KEY, TAINT_UNINITIALIZED_KEY, TAINT_UNREGISTERED_KEY}
)


@dataclass(frozen=True, kw_only=True)
class NodePoolTemplate:
    """One NodePool as the scheduler sees it: what its nodes look like and what they may be."""

    name: str
    weight: int = 0
    requirements: Requirements = field(default_factory=Requirements)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    instance_types: Sequence[InstanceType] = ()
    # spec.limits (cpu, memory, nodes, ...); None means unlimited.
    limits: ResourceMap | None = None

    @property
    def node_requirements(self) -> Requirements:
        """Requirements plus template labels and the nodepool label, as Karpenter builds them."""
        reqs = self.requirements.add(
            *(Requirement(k, complement=False, values=(v,)) for k, v in self.labels.items()),
            Requirement(LABEL_NODEPOOL, complement=False, values=(self.name,)),
        )
        return reqs

    @property
    def daemon_requirements(self) -> Requirements:
        """Node requirements plus the registered/initialized labels DaemonSets may select."""
        return self.node_requirements.add(
            Requirement(LABEL_NODE_REGISTERED, complement=False, values=("true",)),
            Requirement(LABEL_NODE_INITIALIZED, complement=False, values=("true",)),
        )

    @classmethod
    def from_nodepool(
        cls, nodepool: Mapping[str, Any], instance_types: Sequence[InstanceType]
    ) -> NodePoolTemplate:
        """Build from a NodePool object (as a dict in API form)."""
        meta = nodepool.get("metadata") or {}
        spec = nodepool.get("spec") or {}
        template = spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        tspec = template.get("spec") or {}
        limits_raw = spec.get("limits")
        return cls(
            name=str(meta.get("name") or ""),
            weight=int(spec.get("weight") or 0),
            requirements=Requirements.from_node_selector_terms(tspec.get("requirements") or ()),
            labels={str(k): str(v) for k, v in (tmeta.get("labels") or {}).items()},
            taints=tuple(
                Taint.from_dict(t, field=f"spec.template.spec.taints[{i}]")
                for i, t in enumerate(tspec.get("taints") or ())
            ),
            startup_taints=tuple(
                Taint.from_dict(t, field=f"spec.template.spec.startupTaints[{i}]")
                for i, t in enumerate(tspec.get("startupTaints") or ())
            ),
            instance_types=list(instance_types),
            limits=parse_resources(limits_raw, field="spec.limits") if limits_raw else None,
        )


@dataclass(kw_only=True)
class ExistingNode:
    """A node (or a launched NodeClaim) that pods can be placed on without launching anything."""

    name: str
    labels: Mapping[str, str]
    allocatable: ResourceMap
    capacity: ResourceMap | None = None
    taints: tuple[Taint, ...] = ()
    pods: Sequence[PodView] = ()
    initialized: bool = True
    nodepool: str | None = None

    def requirements(self) -> Requirements:
        labels = dict(self.labels)
        labels.setdefault(LABEL_HOSTNAME, self.name)
        return Requirements.from_labels(labels)

    def scheduling_taints(self) -> tuple[Taint, ...]:
        """Taints that keep pods off. A node still booting (not initialized) sheds the known
        ephemeral ones, so they are ignored; on an initialized node they mean what they say
        (an unreachable node takes no pods), as in Karpenter."""
        if self.initialized:
            return self.taints
        return tuple(
            t
            for t in self.taints
            if t.key not in _TRANSIENT_TAINTS and not t.key.startswith(EPHEMERAL_TAINT_PREFIX)
        )

    @classmethod
    def from_node(cls, node: Mapping[str, Any], pods: Sequence[PodView] = ()) -> ExistingNode:
        """An existing node from a Node object (as the API returns it) and the pods bound to
        it; resource and taint errors name the field, since the object may come from a file."""
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        allocatable = parse_resources(
            status.get("allocatable") or status.get("capacity"), field="status.allocatable"
        )
        return cls(
            name=str(meta.get("name") or ""),
            labels=labels,
            allocatable=allocatable,
            capacity=parse_resources(status.get("capacity"), field="status.capacity") or None,
            taints=tuple(
                Taint.from_dict(t, field=f"spec.taints[{i}]")
                for i, t in enumerate(spec.get("taints") or ())
            ),
            pods=list(pods),
            # Nodes Karpenter did not launch are taken as initialized.
            initialized=labels.get(LABEL_NODE_INITIALIZED) == "true"
            or LABEL_NODEPOOL not in labels,
            nodepool=labels.get(LABEL_NODEPOOL),
        )


@dataclass(kw_only=True)
class SchedulingInput:
    """A snapshot to schedule. Pods are the pending ones; bound pods belong to their nodes."""

    pods: Sequence[PodView]
    templates: Sequence[NodePoolTemplate]
    existing_nodes: Sequence[ExistingNode] = ()
    daemonset_pods: Sequence[PodView] = ()
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Capacity each NodePool already owns (for limits); defaults to its existing nodes' capacity.
    pool_usage: Mapping[str, ResourceMap] | None = None
    preference_policy: PreferencePolicy = "Respect"
    min_values_policy: MinValuesPolicy = "Strict"
    max_instance_types: int = MAX_INSTANCE_TYPES
    # CPU seconds for planning a small batch, heuristic and exact planner (engine/exact)
    # together; 0 turns the exact planner off.
    exact_seconds: float = 0.2


@dataclass(kw_only=True)
class NewNodeClaim:
    """A node to launch: the NodeClaim the provisioner creates, with the pods it is for."""

    nodepool: str
    requirements: Requirements
    instance_types: list[InstanceType]
    # Pod requests plus DaemonSet overhead, as Karpenter writes spec.resources.requests.
    requests: ResourceMap
    pods: list[PodView]
    offering: Offering | None
    labels: dict[str, str]
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    min_values_relaxed: bool = False

    @property
    def price(self) -> float:
        return self.offering.price if self.offering is not None else 0.0


@dataclass(kw_only=True)
class SchedulingResult:
    node_claims: list[NewNodeClaim]
    # node name -> pods placed on it
    existing: dict[str, list[PodView]]
    # pod key ("namespace/name") -> why it could not be scheduled
    errors: dict[str, str]
    cost: float
    lower_bound: float
    seconds: float = 0.0  # the whole solve, from the moment the scheduler is built
    # Set by the exact planner: whether the plan is proven cheapest, the best bound it proved
    # on any plan's cost, and what it did (or why the batch was out of its reach).
    optimal: bool = False
    best_bound: float | None = None
    exact: str = ""
    # pod key -> NodePool -> why that NodePool could not take it (pods in `errors` that got as
    # far as the NodePools; the last pass's reasons)
    pool_errors: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """(cost - best bound) / cost; None when no bound was proved."""
        if self.best_bound is None:
            return None
        if self.cost <= 0:
            return 0.0
        return max(0.0, (self.cost - self.best_bound) / self.cost)

    @property
    def ratio(self) -> float:
        if self.lower_bound <= 0:
            return 1.0 if self.cost <= 0 else float("inf")
        return self.cost / self.lower_bound
