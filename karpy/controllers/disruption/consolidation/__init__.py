"""Consolidation: remove or replace underused nodes when their pods fit elsewhere for less.

A pure search (no Kubernetes I/O) over an immutable `Snapshot` of the cluster, meant to run in
a worker thread: `consolidation_candidates` ranks the nodes it may take, `multi_node` and
`single_node` search for commands, each checked by `simulate` (the class-based scheduling
engine placing the candidates' pods on the rest of the cluster plus at most one new NodeClaim).
"""

from __future__ import annotations

from karpy.controllers.disruption.consolidation.candidates import (
    ConsolidationCandidate,
    consolidation_candidates,
    eviction_cost,
)
from karpy.controllers.disruption.consolidation.search import (
    SearchStats,
    approved,
    budget_remaining,
    multi_node,
    single_node,
    within_budget,
)
from karpy.controllers.disruption.consolidation.simulation import (
    REPLACEMENT,
    Decision,
    Infeasible,
    buffer_misses,
    launch_price,
    simulate,
)
from karpy.controllers.disruption.consolidation.snapshot import (
    Snapshot,
    build_snapshot,
    node_price,
)

__all__ = [
    "REPLACEMENT",
    "ConsolidationCandidate",
    "Decision",
    "Infeasible",
    "SearchStats",
    "Snapshot",
    "approved",
    "budget_remaining",
    "buffer_misses",
    "build_snapshot",
    "consolidation_candidates",
    "eviction_cost",
    "launch_price",
    "multi_node",
    "node_price",
    "simulate",
    "single_node",
    "within_budget",
]
