"""Multi-node and single-node consolidation as disruption methods (the loop's `Method`).

Each pass builds a `Snapshot` of the cluster (nodes, NodePools with their instance types from
the cloud provider, PDBs, DaemonSets, volumes, and the pods still to place: pending pods the
provisioner would provision for and those of nodes being deleted) and runs the search
(`search.py`) in a worker thread, so the event loop keeps serving watches and probes while every
candidate is evaluated; with the cyclic collector paused meanwhile (`collector_paused`: its full
collections of the growing snapshot held the GIL for seconds).
A pass may return several independent commands (`compute_many`, see `independent`).
Validation, after the loop's delay, rebuilds the snapshot and simulates the same nodes again:
a command stands only if it is still the same kind (delete or replace) and, for a replace,
the new simulation still offers every instance type the command would launch; several commands
are re-simulated in order, each on the cluster the earlier ones leave.

As Karpenter, a node consolidation leaves gets an `Unconsolidatable` event (on the Node and the
NodeClaim, at most every 15 minutes): when its NodePool disables consolidation or allows only
empty nodes to go, and, from the single-node search, why it cannot go on its own (a pod that
would not schedule, more than one NodeClaim needed, no cheaper replacement, spot-to-spot rules).
"""

from __future__ import annotations

import time
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
from karpy.controllers.disruption.consolidation.independent import (
    apply,
    destinations,
    independent,
    reserve,
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
        self.searched: dict[str, str] = {}
        """The last search's taxonomy words for candidates it could not consolidate (node key
        -> `no-cheaper-replacement`, `spot-to-spot`): `karpy_disruption_blocked_nodes`."""

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

    default_timeout: float = 0.0

    def search(
        self,
        snapshot: Snapshot,
        candidates: Sequence[ConsolidationCandidate],
        budgets: Budgets,
        timeout: float | None = None,
    ) -> tuple[Decision | None, SearchStats]:
        """The best command of this method's kind (None if there is none)."""
        raise NotImplementedError

    def _ranked(self, snapshot: Snapshot, keys: frozenset[str]) -> list[ConsolidationCandidate]:
        found, _ = consolidation_candidates(snapshot)
        return [c for c in found if c.key in keys]

    def _search(
        self, snapshot: Snapshot, keys: frozenset[str], budgets: Budgets
    ) -> tuple[Decision | None, SearchStats]:
        """The best command among the loop's candidates `keys`."""
        try:
            ranked = self._ranked(snapshot, keys)
            return self.search(snapshot, ranked, budgets, self.timeout or self.default_timeout)
        finally:
            self.views.prune()

    def _search_many(
        self, snapshot: Snapshot, keys: frozenset[str], budgets: Budgets
    ) -> tuple[list[Decision], SearchStats]:
        """Independent commands among the loop's candidates `keys` (`independent`)."""
        try:
            ranked = self._ranked(snapshot, keys)
            timeout = self.timeout or self.default_timeout
            return independent(snapshot, ranked, budgets, self.search, timeout=timeout)
        finally:
            self.views.prune()

    def _searched(
        self, snapshot: Snapshot, keys: frozenset[str], budgets: Budgets, many: bool
    ) -> tuple[list[Decision], SearchStats]:
        if many:
            return self._search_many(snapshot, keys, budgets)
        decision, stats = self._search(snapshot, keys, budgets)
        return ([decision] if decision is not None else []), stats

    async def compute(self, candidates: Sequence[Candidate], budgets: Budgets) -> Command:
        commands = await self._compute(candidates, budgets, many=False)
        return commands[0] if commands else Command()

    async def compute_many(
        self, candidates: Sequence[Candidate], budgets: Budgets
    ) -> list[Command]:
        """Independent commands (`independent`): disjoint candidates and destinations, within
        the budgets all together."""
        return await self._compute(candidates, budgets, many=True)

    async def _compute(
        self, candidates: Sequence[Candidate], budgets: Budgets, *, many: bool
    ) -> list[Command]:
        if not candidates:
            return []
        started = time.perf_counter()
        snapshot = await self.snapshot()
        built = time.perf_counter()
        keys = frozenset(c.key for c in candidates)
        decisions, stats = await run_off_loop(
            collector_paused(self._searched), snapshot, keys, budgets, many
        )
        if stats.timed_out:
            CONSOLIDATION_TIMEOUTS_TOTAL.labels(self.consolidation_type).inc()
        self.searched = dict(stats.blockers)
        self._unconsolidatable(stats, candidates)
        log.info(
            "consolidation search",
            consolidation_type=self.consolidation_type,
            candidates=len(candidates),
            commands=len(decisions),
            snapshot_seconds=round(built - started, 3),
            search_seconds=round(time.perf_counter() - built, 3),
            simulations=stats.simulations,
            timed_out=stats.timed_out,
        )
        return [self._command(d, candidates) for d in decisions]

    def _unconsolidatable(self, stats: SearchStats, candidates: Sequence[Candidate]) -> None:
        if self.events is None or not stats.unconsolidatable:
            return
        for c in candidates:
            message = stats.unconsolidatable.get(c.key)
            word = stats.blockers.get(c.key)
            if message is not None and word is not None:
                message = f"{word}: {message}"  # the taxonomy's word first, as the metric's
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
        kept = await self.validate_many([command], candidates, budgets)
        return kept[0] if kept else Command()

    async def validate_many(
        self, commands: Sequence[Command], candidates: Sequence[Candidate], budgets: Budgets
    ) -> list[Command]:
        """The commands that still hold, in order: every candidate still one, within the
        budgets all together, and a fresh simulation (`holds`) on the cluster the earlier
        commands that hold leave, every command's candidates tainted."""
        present = {c.key for c in candidates}
        left = dict(budgets)
        hopeful: list[Command] = []
        for command in commands:
            taken: dict[str, int] = {}
            for c in command.candidates:
                taken[c.nodepool_name] = taken.get(c.nodepool_name, 0) + 1
            if not command.keys() <= present:
                continue
            if any(left.get(pool, 0) < n for pool, n in taken.items()):
                continue
            for pool, n in taken.items():
                left[pool] -= n
            hopeful.append(command)
        if not hopeful:
            return []
        snapshot = await self.snapshot()
        return await run_off_loop(collector_paused(self._resimulate), snapshot, hopeful)

    def _resimulate(self, snapshot: Snapshot, commands: Sequence[Command]) -> list[Command]:
        found, _ = consolidation_candidates(snapshot)
        names = {c.name for command in commands for c in command.candidates}
        snap = reserve(snapshot, names)
        kept: list[Command] = []
        for command in commands:
            keys = command.keys()
            ranked = [c for c in found if c.key in keys]
            if len(ranked) != len(command.candidates):
                continue
            outcome = simulate(snap, ranked)
            still = outcome if isinstance(outcome, Decision) else None
            own = {c.name for c in command.candidates}
            if still is None or destinations(still) & (names - own) or not holds(command, still):
                continue
            kept.append(command)
            snap = apply(snap, still)
        return kept


def holds(command: Command, still: Decision) -> bool:
    """A fresh simulation of a command's candidates backs it: the same kind (delete or
    replace) and, for a replace, every instance type it would launch still offered."""
    if still.kind != command.decision:
        return False
    if command.replacements:
        wanted = {t.name for t in command.replacements[0].instance_types}
        offered = {t.name for t in still.replacement.instance_types} if still.replacement else set()
        return wanted <= offered
    return True


class MultiNodeConsolidation(_Consolidation):
    """Several nodes into at most one replacement (`search.multi_node`)."""

    consolidation_type: str = CONSOLIDATION_TYPE_MULTI

    default_timeout: float = MULTI_NODE_TIMEOUT

    def search(
        self,
        snapshot: Snapshot,
        candidates: Sequence[ConsolidationCandidate],
        budgets: Budgets,
        timeout: float | None = None,
    ) -> tuple[Decision | None, SearchStats]:
        return multi_node(
            snapshot, candidates, budgets=budgets, timeout=timeout or MULTI_NODE_TIMEOUT
        )


class SingleNodeConsolidation(_Consolidation):
    """One node at a time, every candidate (`search.single_node`)."""

    consolidation_type: str = CONSOLIDATION_TYPE_SINGLE

    default_timeout: float = SINGLE_NODE_TIMEOUT

    def search(
        self,
        snapshot: Snapshot,
        candidates: Sequence[ConsolidationCandidate],
        budgets: Budgets,
        timeout: float | None = None,
    ) -> tuple[Decision | None, SearchStats]:
        found, stats = single_node(
            snapshot, candidates, budgets=budgets, timeout=timeout or SINGLE_NODE_TIMEOUT
        )
        return (found[0] if found else None), stats
