"""Which nodes a graceful disruption (emptiness) may take, and why the others may not.

A candidate is a node karpy launched that has registered and initialized, is not being deleted
or nominated for pending pods, is not annotated `karpenter.sh/do-not-disrupt: "true"`, belongs to
a NodePool that exists, and has no pod that may not be evicted now: none with an active
`karpenter.sh/do-not-disrupt` annotation (`"true"`, or a duration from the pod's start that has
not passed) and none a PodDisruptionBudget protects at the moment.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from karpy.apis.duration import DurationError, parse_duration
from karpy.apis.objects import is_condition_true, parse_time
from karpy.apis.v1 import NodePool
from karpy.apis.v1.labels import (
    ANNOTATION_DO_NOT_DISRUPT,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
)
from karpy.controllers.disruption.blocker import (
    DO_NOT_DISRUPT,
    NOMINATED,
    NOT_INITIALIZED,
    PDB,
    Blocker,
)
from karpy.scheduling.selectors import LabelSelector, SelectorError
from karpy.state import StateNode
from karpy.state import pods as podutil

__all__ = [
    "Candidate",
    "NotCandidate",
    "PdbLimits",
    "candidate",
    "do_not_disrupt_active",
    "quoted",
]

JSON = dict[str, Any]


def quoted(text: str) -> str:
    """`text` in double quotes, as Go's `%q` writes it in Karpenter's messages."""
    return json.dumps(text)


class NotCandidate(Exception):
    """A node may not be disrupted now; the message says why, in Karpenter's words."""

    def __init__(
        self, message: str, *, publish: bool = True, blocker: Blocker | None = None
    ) -> None:
        super().__init__(message)
        self.publish = publish
        self.blocker = blocker
        """The taxonomy's reason and object (None: not a reason anyone can lift)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node the disruption loop may act on, with its NodePool."""

    node: StateNode
    nodepool: NodePool

    @property
    def key(self) -> str:
        return self.node.key

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def nodeclaim_name(self) -> str:
        return self.node.nodeclaim_name or ""

    @property
    def nodepool_name(self) -> str:
        return self.nodepool.name

    @property
    def capacity_type(self) -> str:
        return self.node.labels.get(LABEL_CAPACITY_TYPE, "")

    @property
    def instance_type(self) -> str:
        return self.node.labels.get(LABEL_INSTANCE_TYPE, "")

    @property
    def created(self) -> str:
        meta = (self.node.nodeclaim or {}).get("metadata") or {}
        return str(meta.get("creationTimestamp") or "")

    def is_empty(self) -> bool:
        """No pod that would need a new place: only DaemonSet, static, finished or
        terminating pods are left."""
        return not self.node.reschedulable_pods() and self.node.is_empty()


def do_not_disrupt_active(pod: Mapping[str, Any], now: datetime) -> bool:
    """The pod is running and its `karpenter.sh/do-not-disrupt` annotation holds right now:
    `"true"`, or a duration since the pod started (its creation, if the start is unknown) that
    has not yet passed. A value that is neither blocks, as the user asked for something."""
    if not podutil.is_active(pod):
        return False
    meta = pod.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(ANNOTATION_DO_NOT_DISRUPT)
    if value is None or value in ("", "false"):
        return False
    if value == "true":
        return True
    try:
        window = parse_duration(str(value))
    except DurationError:
        return True
    if window <= timedelta(0):
        return False
    started = parse_time((pod.get("status") or {}).get("startTime")) or parse_time(
        meta.get("creationTimestamp")
    )
    return started is None or now < started + window


@dataclass(frozen=True, slots=True)
class _Pdb:
    key: str
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    always_allow_unhealthy: bool


class PdbLimits:
    """The PodDisruptionBudgets of the cluster, asked whether a pod may be evicted now."""

    def __init__(self, pdbs: Iterable[Mapping[str, Any]]) -> None:
        self._by_namespace: dict[str, list[_Pdb]] = {}
        for pdb in pdbs:
            meta = pdb.get("metadata") or {}
            spec = pdb.get("spec") or {}
            status = pdb.get("status") or {}
            namespace = str(meta.get("namespace") or "default")
            try:
                selector = LabelSelector.from_dict(spec.get("selector"))
            except SelectorError:
                continue  # the apiserver rejects these; nothing can match
            self._by_namespace.setdefault(namespace, []).append(
                _Pdb(
                    key=f"{namespace}/{meta.get('name', '')}",
                    namespace=namespace,
                    selector=selector,
                    disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
                    always_allow_unhealthy=spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
                )
            )

    def blocking(self, pod: Mapping[str, Any]) -> str | None:
        """Why evicting `pod` would be refused now, or None."""
        found = self.blocker(pod)
        return found.detail if found is not None else None

    def blocker(self, pod: Mapping[str, Any]) -> Blocker | None:
        """The PDB that refuses evicting `pod` now (its `pdb` blocker), or None."""
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        matching = [
            p
            for p in self._by_namespace.get(str(meta.get("namespace") or "default"), ())
            if p.selector.matches(labels)
        ]
        if len(matching) > 1:
            keys = sorted(p.key for p in matching)
            detail = (
                f"pod {quoted(podutil.pod_key(pod))} is selected by multiple pdbs "
                f"({', '.join(keys)})"
            )
            return Blocker(PDB, "PodDisruptionBudget", keys[0], detail)
        for pdb in matching:
            if pdb.disruptions_allowed > 0:
                continue
            if pdb.always_allow_unhealthy and not is_condition_true(pod, "Ready"):
                continue
            detail = f"pdb {quoted(pdb.key)} prevents pod evictions"
            return Blocker(PDB, "PodDisruptionBudget", pdb.key, detail)
        return None


def _evictable(pod: Mapping[str, Any]) -> bool:
    return podutil.is_active(pod) and not podutil.is_owned_by_node(pod)


def candidate(
    node: StateNode,
    *,
    nodepools: Mapping[str, NodePool],
    pdbs: PdbLimits,
    now: datetime,
    in_flight: Sequence[str] | frozenset[str] = (),
    graceful: bool = True,
) -> Candidate:
    """`node` as a candidate, or `NotCandidate` saying why it is not one.

    A graceful method (emptiness, consolidation) always respects do-not-disrupt pods and PDBs;
    an eventual one (drift) lets a NodeClaim with `terminationGracePeriod` through, since its
    drain is bounded anyway."""
    if not node.managed:
        raise NotCandidate("node isn't managed by karpenter", publish=False)
    if node.node is None:
        raise NotCandidate("nodeclaim does not have an associated node")
    if not node.initialized:
        detail = "node isn't initialized"
        raise NotCandidate(detail, blocker=Blocker(NOT_INITIALIZED, "Node", node.name, detail))
    if node.marked_for_deletion or node.key in in_flight:
        raise NotCandidate("node is deleting or marked for deletion")
    if node.nominated or node.planned:
        detail = "node is nominated for a pending pod"
        raise NotCandidate(detail, blocker=Blocker(NOMINATED, "Node", node.name, detail))
    if node.annotations.get(ANNOTATION_DO_NOT_DISRUPT) == "true":
        detail = f'disruption is blocked through the "{ANNOTATION_DO_NOT_DISRUPT}" annotation'
        raise NotCandidate(
            detail, publish=False, blocker=Blocker(DO_NOT_DISRUPT, "Node", node.name, detail)
        )
    pool_name = node.nodepool
    if not pool_name:
        raise NotCandidate("node doesn't have required label karpenter.sh/nodepool")
    pool = nodepools.get(pool_name)
    if pool is None:
        raise NotCandidate(f"NodePool {quoted(pool_name)} not found")
    if not graceful and ((node.nodeclaim or {}).get("spec") or {}).get("terminationGracePeriod"):
        return Candidate(node=node, nodepool=pool)
    for pod in node.pods:
        if do_not_disrupt_active(pod, now):
            key = podutil.pod_key(pod)
            detail = f'pod {quoted(key)} has "{ANNOTATION_DO_NOT_DISRUPT}" annotation'
            raise NotCandidate(
                detail, publish=False, blocker=Blocker(DO_NOT_DISRUPT, "Pod", key, detail)
            )
    for pod in node.pods:
        if _evictable(pod):
            found = pdbs.blocker(pod)
            if found is not None:
                raise NotCandidate(found.detail, blocker=found)
    return Candidate(node=node, nodepool=pool)
