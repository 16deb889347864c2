"""Which nodes consolidation may take, with the price and disruption cost it ranks them by.

The common rules (managed, initialized, not nominated nor deleting, no `do-not-disrupt` node or
pod, PDBs allow every eviction) are `karpy.controllers.disruption.candidates`; on top of them,
as Karpenter's `ShouldDisrupt`: the NodePool is not static and consolidates
(`consolidateAfter` is not `Never`) with a policy other than `WhenEmpty`, the node's offering
(type, zone, capacity type) is known, it is not empty (emptiness takes those), and its
NodeClaim is `Consolidatable` (its `consolidateAfter` has elapsed since the last pod change).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from karpy.apis.objects import is_condition_true
from karpy.apis.v1 import conditions as cond
from karpy.controllers.disruption.candidates import Candidate, NotCandidate, candidate, quoted
from karpy.controllers.disruption.consolidation.snapshot import Snapshot, node_price
from karpy.state import pods as podutil

__all__ = [
    "POLICY_BALANCED",
    "POLICY_WHEN_EMPTY",
    "ConsolidationCandidate",
    "consolidation_candidates",
    "eviction_cost",
]

POLICY_WHEN_EMPTY: Final = "WhenEmpty"
POLICY_BALANCED: Final = "Balanced"
DELETION_COST_ANNOTATION: Final = "controller.kubernetes.io/pod-deletion-cost"

JSON = Mapping[str, Any]


def eviction_cost(pod: JSON) -> float:
    """Karpenter's cost of evicting one pod: 1 + deletion-cost/2^27 + priority/2^25, in
    [-10, 10]."""
    cost = 1.0
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    if raw is not None:
        with contextlib.suppress(ValueError):
            cost += float(int(str(raw))) / 2**27
    priority = (pod.get("spec") or {}).get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool):
        cost += priority / 2**25
    return max(-10.0, min(10.0, cost))


@dataclass(frozen=True, slots=True)
class ConsolidationCandidate:
    """A node consolidation may remove, with what moving its pods costs."""

    candidate: Candidate
    price: float
    """Hourly price of the node's offering."""
    pods: tuple[JSON, ...]
    """The pods that need a new place if the node goes."""
    disruption_cost: float
    """Karpenter's `RescheduleDisruptionCost`: 1 + the pods' positive eviction costs."""

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def key(self) -> str:
        return self.candidate.key

    @property
    def nodepool(self) -> str:
        return self.candidate.nodepool_name

    @property
    def policy(self) -> str:
        return str(self.candidate.nodepool.spec.disruption.consolidation_policy)

    @property
    def savings_ratio(self) -> float:
        """Price per unit of disruption: the order Karpenter (v1.14+) tries candidates in."""
        return self.price / self.disruption_cost if self.disruption_cost > 0 else math.inf


def _check(c: Candidate, snapshot: Snapshot) -> float:
    """The node's price if consolidation may act on it; `NotCandidate` otherwise."""
    pool = c.nodepool
    disruption = pool.spec.disruption
    if pool.is_static:
        raise NotCandidate("node belongs to a static NodePool", publish=False)
    if disruption.consolidate_after_duration() is None:
        raise NotCandidate(f"NodePool {quoted(pool.name)} has consolidation disabled")
    if disruption.consolidation_policy == POLICY_WHEN_EMPTY:
        raise NotCandidate(
            f"NodePool {quoted(pool.name)} has consolidation policy {POLICY_WHEN_EMPTY}",
            publish=False,
        )
    price = node_price(c.node, snapshot.templates.get(pool.name))
    if price is None:
        raise NotCandidate("instance type, zone or capacity type not found in its NodePool")
    if c.is_empty():
        raise NotCandidate("node is empty (emptiness handles it)", publish=False)
    if not is_condition_true(c.node.nodeclaim, cond.NODECLAIM_CONSOLIDATABLE):
        raise NotCandidate("node is not consolidatable yet (consolidateAfter)", publish=False)
    return price


def consolidation_candidates(
    snapshot: Snapshot,
) -> tuple[list[ConsolidationCandidate], dict[str, str]]:
    """The candidates, highest savings ratio first (ties by name), and why each other managed
    node is not one (node name -> reason)."""
    out: list[ConsolidationCandidate] = []
    blocked: dict[str, str] = {}
    in_flight = tuple(snapshot.in_flight)
    for node in snapshot.nodes:
        try:
            c = candidate(
                node,
                nodepools=snapshot.nodepools,
                pdbs=snapshot.pdbs,
                now=snapshot.now,
                in_flight=in_flight,
            )
            price = _check(c, snapshot)
        except NotCandidate as why:
            if node.managed:
                blocked[node.name] = str(why)
            continue
        pods = tuple(node.reschedulable_pods())
        cost = 1.0 + sum(max(0.0, eviction_cost(p)) for p in pods)
        out.append(
            ConsolidationCandidate(candidate=c, price=price, pods=pods, disruption_cost=cost)
        )
    out.sort(key=lambda c: (-c.savings_ratio, c.name))
    return out, blocked


def pod_keys(c: ConsolidationCandidate) -> list[str]:
    return [podutil.pod_key(p) for p in c.pods]
