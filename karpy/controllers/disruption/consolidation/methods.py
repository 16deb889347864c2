"""Multi-node and single-node consolidation as disruption methods (the loop's `Method`).

Each pass builds a `Snapshot` of the cluster (nodes, NodePools with their instance types from
the cloud provider, PDBs, DaemonSets, volumes, and the pods still to place: pending pods the
provisioner would provision for and those of nodes being deleted) and runs the search
(`search.py`) in a worker thread, so the event loop keeps serving watches and probes while every
candidate is evaluated; with the cyclic collector paused meanwhile (`collector_paused`: its full
collections of the growing snapshot held the GIL for seconds).
Validation, after the loop's delay, rebuilds the snapshot and simulates the same nodes again:
the command stands only if it is still the same kind (delete or replace) and, for a replace,
the new simulation still offers every instance type the command would launch.

As Karpenter, a node consolidation leaves gets an `Unconsolidatable` event (on the Node and the
NodeClaim, at most every 15 minutes): when its NodePool disables consolidation or allows only
empty nodes to go, and, from the single-node search, why it cannot go on its own (a pod that
would not schedule, more than one NodeClaim needed, no cheaper replacement, spot-to-spot rules).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pydantic
import structlog
from prometheus_client import Counter

from karpy.apis.objects import is_condition_true
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.disruption.candidates import Candidate, quoted
from karpy.controllers.disruption.consolidation.candidates import (
    POLICY_WHEN_EMPTY,
    ConsolidationCandidate,
    consolidation_candidates,
)
from karpy.controllers.disruption.consolidation.search import (
    MULTI_NODE_TIMEOUT,
    SINGLE_NODE_TIMEOUT,
    SearchStats,
    multi_node,
    single_node,
)
from karpy.controllers.disruption.consolidation.simulation import Decision, simulate
from karpy.controllers.disruption.consolidation.snapshot import Snapshot, build_snapshot
from karpy.controllers.disruption.events import DedupingEvents, publish_unconsolidatable
from karpy.controllers.disruption.methods.base import Budgets, Command
from karpy.controllers.disruption.methods.simulation import nodepool_templates
from karpy.kube import Clock, Informer, RealClock
from karpy.kube.memory import collector_paused
from karpy.kube.metrics import REGISTRY
from karpy.kube.offload import run_off_loop
from karpy.state import Cluster
from karpy.state.inputs import PodViews

__all__ = [
    "CONSOLIDATION_TYPE_MULTI",
    "CONSOLIDATION_TYPE_SINGLE",
    "MultiNodeConsolidation",
    "SingleNodeConsolidation",
]

CONSOLIDATION_TYPE_MULTI: Final = "multi"
CONSOLIDATION_TYPE_SINGLE: Final = "single"

log = structlog.get_logger("karpy.controllers.disruption")

CONSOLIDATION_TIMEOUTS_TOTAL = Counter(
    "karpenter_voluntary_disruption_consolidation_timeouts_total",
    "Number of times the Consolidation algorithm has reached a timeout. Labeled by consolidation "
    "type.",
    ["consolidation_type"],
    registry=REGISTRY,
)


def should_consolidate(c: Candidate, events: DedupingEvents | None = None) -> bool:
    """Karpenter's `ShouldDisrupt` for consolidation, without the price (the search checks it);
    with `events`, a NodePool that disables (non-empty) consolidation says so on the node."""
    pool = c.nodepool
    disruption = pool.spec.disruption
    if pool.is_static:
        return False
    why = None
    if disruption.consolidate_after_duration() is None:
        why = f"NodePool {quoted(pool.name)} has consolidation disabled"
    elif disruption.consolidation_policy == POLICY_WHEN_EMPTY:
        why = f"NodePool {quoted(pool.name)} has non-empty consolidation disabled"
    if why is not None:
        if events is not None:
            publish_unconsolidatable(events, c.node.node, c.node.nodeclaim, message=why)
        return False
    labels = c.node.labels
    if not all(
        labels.get(k) for k in (LABEL_INSTANCE_TYPE, LABEL_CAPACITY_TYPE, LABEL_TOPOLOGY_ZONE)
    ):
        return False
    if not is_condition_true(c.node.nodeclaim, cond.NODECLAIM_CONSOLIDATABLE):
        return False
    return not c.is_empty()


class _Consolidation:
    reason: Final = cond.DISRUPTION_REASON_UNDERUTILIZED
    needs_validation: Final = True
    graceful: Final = True
    consolidation_type: str = ""

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud_provider: CloudProvider,
        pdbs: Informer | None = None,
        clock: Clock | None = None,
        spot_to_spot: bool = False,
        min_savings: float = 0.0,
        timeout: float | None = None,
        events: DedupingEvents | None = None,
        default_spread: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.events = events
        self.cluster = cluster
        self.default_spread = tuple(default_spread)
        """kube-scheduler's cluster-default spread constraints (a setting), as provisioning."""
        self.cloud_provider = cloud_provider
        self.pdbs = pdbs
        self.clock = clock or RealClock()
        self.spot_to_spot = spot_to_spot
        self.min_savings = min_savings
        self.timeout = timeout
        self.views = PodViews()

    def should_disrupt(self, candidate: Candidate) -> bool:
        return should_consolidate(candidate, self.events)

    async def snapshot(self) -> Snapshot:
        """The cluster now, as the search sees it (built in a worker thread)."""
        templates = await nodepool_templates(self.cluster, self.cloud_provider)
        state = self.cluster.snapshot()
        nodepools: dict[str, NodePool] = {}
        for raw in self.cluster.nodepools():
            try:
                pool = NodePool.model_validate(raw)
            except pydantic.ValidationError:
                continue
            nodepools[pool.name] = pool
        pdbs = self.pdbs.list() if self.pdbs is not None else []
        # As Karpenter's SimulateScheduling: the pods the provisioner still has to place (and
        # those of nodes being deleted) take their room before the candidates' pods do.
        pending = [
            *self.cluster.provisionable_pods(),
            *self.cluster.pods_on_deleting_nodes(state.nodes),
        ]
        return await run_off_loop(
            collector_paused(build_snapshot),
            nodes=state.nodes,
            pending=pending,
            nodepools=nodepools,
            templates=templates,
            pdbs=pdbs,
            daemonsets=state.daemonsets,
            namespaces=state.namespace_labels,
            claims=state.claims,
            volumes=state.volumes,
            storage_classes=state.storage_classes,
            now=self.clock.wall(),
            spot_to_spot=self.spot_to_spot,
            min_savings=self.min_savings,
            views=self.views,
            configs=state.configs,
            nodeclasses=state.nodeclasses,
            overlays=state.overlays,
            buffers=state.buffers,
            pod_templates=state.pod_templates,
            default_spread=self.default_spread,
        )

    def search(
        self, snapshot: Snapshot, candidates: Sequence[ConsolidationCandidate], budgets: Budgets
    ) -> tuple[Decision | None, SearchStats]:
        raise NotImplementedError

    def _ranked(self, snapshot: Snapshot, keys: frozenset[str]) -> list[ConsolidationCandidate]:
        found, _ = consolidation_candidates(snapshot)
        return [c for c in found if c.key in keys]

    def _search(
        self, snapshot: Snapshot, keys: frozenset[str], budgets: Budgets
    ) -> tuple[Decision | None, SearchStats]:
        try:
            return self.search(snapshot, self._ranked(snapshot, keys), budgets)
        finally:
            self.views.prune()

    async def compute(self, candidates: Sequence[Candidate], budgets: Budgets) -> Command:
        if not candidates:
            return Command()
        snapshot = await self.snapshot()
        keys = frozenset(c.key for c in candidates)
        decision, stats = await run_off_loop(
            collector_paused(self._search), snapshot, keys, budgets
        )
        self._unconsolidatable(stats, candidates)
        if decision is None:
            return Command()
        return self._command(decision, candidates)

    def _unconsolidatable(self, stats: SearchStats, candidates: Sequence[Candidate]) -> None:
        if self.events is None or not stats.unconsolidatable:
            return
        for c in candidates:
            message = stats.unconsolidatable.get(c.key)
            if message is not None:
                publish_unconsolidatable(
                    self.events, c.node.node, c.node.nodeclaim, message=message
                )

    def _command(self, decision: Decision, candidates: Sequence[Candidate]) -> Command:
        by_key = {c.key: c for c in candidates}
        chosen = tuple(by_key[c.key] for c in decision.candidates if c.key in by_key)
        replacements = (decision.replacement,) if decision.replacement is not None else ()
        log.info(
            "found consolidation",
            decision=decision.kind,
            consolidation_type=self.consolidation_type,
            nodes=decision.names,
            savings=round(decision.savings, 6),
            pods=len(decision.moves),
        )
        return Command(
            candidates=chosen,
            replacements=replacements,
            reason=self.reason,
            consolidation_type=self.consolidation_type,
            savings=decision.savings,
            pods=len(decision.moves),
        )

    async def validate(
        self, command: Command, candidates: Sequence[Candidate], budgets: Budgets
    ) -> Command:
        keys = command.keys()
        present = {c.key for c in candidates}
        if not keys <= present:
            return Command()
        taken: dict[str, int] = {}
        for c in command.candidates:
            taken[c.nodepool_name] = taken.get(c.nodepool_name, 0) + 1
        if any(budgets.get(pool, 0) < n for pool, n in taken.items()):
            return Command()
        snapshot = await self.snapshot()
        still = await run_off_loop(collector_paused(self._resimulate), snapshot, keys)
        if still is None or still.kind != command.decision:
            return Command()
        if command.replacements:
            wanted = {t.name for t in command.replacements[0].instance_types}
            offered = (
                {t.name for t in still.replacement.instance_types} if still.replacement else set()
            )
            if not wanted <= offered:
                return Command()
        return command

    def _resimulate(self, snapshot: Snapshot, keys: frozenset[str]) -> Decision | None:
        ranked = self._ranked(snapshot, keys)
        if len(ranked) != len(keys):
            return None
        outcome = simulate(snapshot, ranked)
        return outcome if isinstance(outcome, Decision) else None


class MultiNodeConsolidation(_Consolidation):
    """Several nodes into at most one replacement (`search.multi_node`)."""

    consolidation_type: str = CONSOLIDATION_TYPE_MULTI

    def search(
        self, snapshot: Snapshot, candidates: Sequence[ConsolidationCandidate], budgets: Budgets
    ) -> tuple[Decision | None, SearchStats]:
        decision, stats = multi_node(
            snapshot, candidates, budgets=budgets, timeout=self.timeout or MULTI_NODE_TIMEOUT
        )
        if stats.timed_out:
            CONSOLIDATION_TIMEOUTS_TOTAL.labels(self.consolidation_type).inc()
        return decision, stats


class SingleNodeConsolidation(_Consolidation):
    """One node at a time, every candidate (`search.single_node`)."""

    consolidation_type: str = CONSOLIDATION_TYPE_SINGLE

    def search(
        self, snapshot: Snapshot, candidates: Sequence[ConsolidationCandidate], budgets: Budgets
    ) -> tuple[Decision | None, SearchStats]:
        found, stats = single_node(
            snapshot, candidates, budgets=budgets, timeout=self.timeout or SINGLE_NODE_TIMEOUT
        )
        if stats.timed_out:
            CONSOLIDATION_TIMEOUTS_TOTAL.labels(self.consolidation_type).inc()
        return (found[0] if found else None), stats
