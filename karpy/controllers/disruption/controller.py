"""`disruption`: the singleton loop that runs the disruption methods within budgets.

Every 10 seconds (at once again after a method acted), once cluster state has synced:

1. Crash recovery of marks: a node left with the `karpenter.sh/disrupted` taint or a NodeClaim
   left with the `DisruptionReason` condition, that no command owns (neither running here nor
   persisted on the NodeClaim for the queue to recover) and that is not being deleted, gets them
   removed.
2. The methods, in Karpenter's order (emptiness, drift, multi-node consolidation, single-node
   consolidation); the first that yields a command wins the pass. For each: the candidates
   (see `candidates`) the method's `should_disrupt` accepts, the budgets for its reason, its
   `compute` (consolidation: `compute_many`, several independent commands within the budgets
   all together); for methods that need it, after one validation delay (15 s, as Karpenter's),
   its `validate` on freshly built candidates and budgets, which drops each command that no
   longer holds.
3. The commands go to the orchestration queue (`orchestration`) together, which marks,
   launches the replacements, waits for them and deletes the candidates, while the loop goes
   on to its next pass (the queue's candidates are no candidates).

The loop is also the queue's `revalidate`: a delete-only command a previous leader left
persisted is checked again, as after the validation delay, before the new leader deletes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import pydantic
import structlog

from karpy.apis.objects import get_condition, is_deleting, parse_time
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.controllers.disruption import metrics
from karpy.controllers.disruption.blocker import REASONS
from karpy.controllers.disruption.blockers import METHODS, REASON_OF, Verdict, node_verdicts
from karpy.controllers.disruption.budgets import BudgetState, budget_states
from karpy.controllers.disruption.candidates import (
    Candidate,
    NotCandidate,
    PdbLimits,
    candidate,
)
from karpy.controllers.disruption.events import (
    REASON_DISRUPTION_BLOCKED,
    DedupingEvents,
    involved_node,
    involved_nodeclaim,
    involved_nodepool,
)
from karpy.controllers.disruption.methods import Command, Emptiness, ManyCommands, Method
from karpy.controllers.disruption.methods.emptiness import CONSOLIDATION_TYPE_EMPTY
from karpy.controllers.disruption.orchestration import OrchestrationQueue
from karpy.controllers.disruption.orchestration.marks import (
    has_disrupted_taint,
    set_disrupted_taint,
    set_disruption_reason,
)
from karpy.kube import Client, Clock, EventRecorder, Informer, RealClock, Result
from karpy.kube.builder import Builder, Enqueuer, singleton
from karpy.kube.offload import run_off_loop
from karpy.state import Cluster, StateNode

__all__ = [
    "CONSOLIDATION_TYPE_EMPTY",
    "NAME",
    "POLLING_PERIOD",
    "VALIDATION_DELAY",
    "DisruptionController",
]

NAME: Final = "disruption"
POLLING_PERIOD: Final = 10.0
VALIDATION_DELAY: Final = 15.0
UNSYNCED_RETRY: Final = 1.0
STALE_MARK_AFTER: Final = 60.0
"""Seconds a `DisruptionReason` must have stood before it may be stale: whoever writes one
(a disruption command, the interruption handler) deletes the NodeClaim right after, and on a
busy API server the cache can show the mark seconds before the deletion."""

BLOCKERS_PERIOD: Final = 30.0
"""Seconds between two computations of `karpy_disruption_blocked_nodes`."""

log = structlog.get_logger("karpy.controllers.disruption")


def _all_verdicts(
    *,
    nodes: Sequence[StateNode],
    nodepools: Mapping[str, NodePool],
    pdbs: Sequence[Mapping[str, Any]],
    now: datetime,
    busy: frozenset[str],
    searched: Mapping[str, str],
) -> dict[str, tuple[str, list[Verdict]]]:
    """Every managed node's verdicts (pure: runs in a worker thread)."""
    limits = PdbLimits(pdbs)
    budgets = {
        reason: budget_states(nodes, nodepools, reason=reason, now=now)
        for reason in REASON_OF.values()
    }
    return {
        node.key: (
            node.nodepool or "",
            node_verdicts(
                node,
                nodepools=nodepools,
                pdbs=limits,
                now=now,
                budgets=budgets,
                in_flight=busy,
                searched=searched,
            ),
        )
        for node in nodes
        if node.managed
    }


JSON = dict[str, Any]


def _uid(obj: Mapping[str, Any] | None) -> str:
    meta = (obj or {}).get("metadata") or {}
    return str(meta.get("uid") or meta.get("name") or "")


class DisruptionController:
    """Runs the methods in order, validates, and hands the first command to the queue."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        cluster: Cluster,
        events: EventRecorder,
        pdbs: Informer | None = None,
        clock: Clock | None = None,
        validation_delay: float = VALIDATION_DELAY,
        polling_period: float = POLLING_PERIOD,
        methods: Sequence[Method] | None = None,
        queue: OrchestrationQueue | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.clock = clock or RealClock()
        self._handle = Enqueuer[str]()
        self.events = DedupingEvents(events, clock=self.clock)
        self.pdbs = pdbs
        self.validation_delay = validation_delay
        self.polling_period = polling_period
        self.methods: list[Method] = (
            list(methods) if methods is not None else [Emptiness(events=self.events)]
        )
        self.queue = (
            queue
            if queue is not None
            else OrchestrationQueue(
                client=client, cluster=cluster, events=self.events, clock=self.clock
            )
        )
        self._blockers_at = -BLOCKERS_PERIOD
        if self.queue.revalidate is None:
            self.queue.revalidate = self.revalidate

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)
        self._handle = builder.enqueuer()

    # -- the loop ---------------------------------------------------------------------------------

    async def reconcile(self, _key: str) -> Result:
        if not self.cluster.synced():
            log.debug("waiting on cluster sync")
            return Result(requeue_after=UNSYNCED_RETRY)
        await self.clear_stale_disruptions()
        await self.publish_blockers()
        for method in self.methods:
            began = time.perf_counter()
            try:
                started = await self.run(method)
            finally:
                metrics.EVALUATION_DURATION.labels(
                    method.reason.lower(), method.consolidation_type
                ).observe(time.perf_counter() - began)
            if started:
                return Result(requeue_after=0.0)
        return Result(requeue_after=self.polling_period)

    async def run(self, method: Method) -> bool:
        """One method's turn: True when it started a command."""
        began = time.perf_counter()
        candidates, budgets = self.prepare(method, publish=True)
        if not candidates:
            return False
        commands = await self.compute(method, candidates, budgets)
        if not commands:
            return False
        computed = time.perf_counter()
        if method.needs_validation:
            commands = await self.validate(method, commands)
        validated = time.perf_counter()
        if not commands:
            return False
        if self._handle.stopping:
            # told to stop during the validation wait: start nothing a successor would not see
            # validated (the next leader computes afresh), as Karpenter's cancelled context does
            log.info("stopping; not starting validated disruption commands", commands=len(commands))
            return False
        outcomes = await asyncio.gather(
            *(self.queue.start(c) for c in commands), return_exceptions=True
        )
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        started = [o is True for o in outcomes]
        log.info(
            "disruption pass",
            reason=method.reason.lower(),
            **{"consolidation-type": method.consolidation_type},
            commands=len(commands),
            started=sum(started),
            nodes=sum(len(c.candidates) for c, ok in zip(commands, started, strict=True) if ok),
            compute_seconds=round(computed - began, 3),
            validation_seconds=round(validated - computed, 3),
            start_seconds=round(time.perf_counter() - validated, 3),
            failed=len(failures),
        )
        if failures:
            # Every start has finished (none left running unawaited); the loop's retry with
            # backoff takes the first error, and the commands that did start stay queued.
            raise failures[0]
        return any(started)

    async def compute(
        self, method: Method, candidates: Sequence[Candidate], budgets: Mapping[str, int]
    ) -> list[Command]:
        """The method's commands: several independent ones from a `ManyCommands` method."""
        if isinstance(method, ManyCommands):
            return [c for c in await method.compute_many(candidates, budgets) if not c.is_noop]
        command = await method.compute(candidates, budgets)
        return [] if command.is_noop else [command]

    async def validate(self, method: Method, commands: Sequence[Command]) -> list[Command]:
        """The commands that still hold after the validation delay (one wait for them all)."""
        await self.clock.sleep(self.validation_delay)
        if not self.cluster.synced():
            return []
        candidates, budgets = self.prepare(method, publish=False)
        if isinstance(method, ManyCommands):
            valid = [c for c in await method.validate_many(commands, candidates, budgets)]
        else:
            valid = [await method.validate(c, candidates, budgets) for c in commands]
        valid = [c for c in valid if not c.is_noop]
        dropped = sum(len(c.candidates) for c in commands) - sum(len(c.candidates) for c in valid)
        if dropped > 0:
            metrics.FAILED_VALIDATIONS_TOTAL.labels(method.consolidation_type).inc(dropped)
        if len(valid) < len(commands):
            log.debug(
                "abandoning disruption attempt due to pod churn, command is no longer valid",
                reason=method.reason.lower(),
                **{"consolidation-type": method.consolidation_type},
                dropped=len(commands) - len(valid),
            )
        return valid

    async def revalidate(self, reason: str, nodes: Sequence[StateNode]) -> bool:
        """Whether deleting `nodes` for `reason` still holds: every node is still a candidate
        of the method that spends `reason`, and that method's validation keeps them all within
        today's budgets. Methods Karpenter does not validate (drift) keep their command; an
        unknown reason does not."""
        method = next((m for m in self.methods if m.reason == reason), None)
        if method is None:
            return False
        if not method.needs_validation:
            return True
        now = self.clock.wall()
        nodepools = self.nodepools()
        pdbs = PdbLimits(self.pdbs.list() if self.pdbs is not None else ())
        found: list[Candidate] = []
        for node in nodes:
            try:
                c = candidate(
                    node,
                    nodepools=nodepools,
                    pdbs=pdbs,
                    now=now,
                    in_flight=self.queue.busy(),
                    graceful=method.graceful,
                )
            except NotCandidate:
                return False
            if not method.should_disrupt(c):
                return False
            found.append(c)
        states = budget_states(self.cluster.nodes(), nodepools, reason=reason, now=now)
        budgets = {name: state.remaining for name, state in states.items()}
        command = Command(
            candidates=tuple(found), reason=reason, consolidation_type=method.consolidation_type
        )
        valid = await method.validate(command, found, budgets)
        return valid.keys() == command.keys() and not valid.replacements

    def prepare(self, method: Method, *, publish: bool) -> tuple[list[Candidate], dict[str, int]]:
        """The method's candidates and what each NodePool's budget for its reason allows."""
        now = self.clock.wall()
        nodes = self.cluster.nodes()
        nodepools = self.nodepools()
        found = self.candidates(
            nodes, nodepools, now=now, publish=publish, graceful=method.graceful
        )
        eligible = [c for c in found if method.should_disrupt(c)]
        reason = method.reason.lower()
        metrics.ELIGIBLE_NODES.labels(reason).set(len(eligible))
        states = budget_states(nodes, nodepools, reason=method.reason, now=now)
        for name, state in states.items():
            metrics.ALLOWED_DISRUPTIONS.labels(name, reason).set(state.remaining)
            metrics.CONSUMING_BUDGETS.labels(name, reason).set(state.disrupting)
        if publish:
            self._blocked_pools(eligible, states, nodepools, method.reason)
        return eligible, {name: state.remaining for name, state in states.items()}

    def verdicts(
        self, nodepools: Mapping[str, NodePool] | None = None
    ) -> dict[str, tuple[str, list[Verdict]]]:
        """Every managed node's verdict per method (node key -> (NodePool, verdicts)): what
        `karpy explain node` answers, from the same functions, on the loop's state."""
        return _all_verdicts(**self._verdict_inputs(nodepools))

    def _verdict_inputs(self, nodepools: Mapping[str, NodePool] | None) -> dict[str, Any]:
        """What the verdicts read, taken on the event loop (informer lists, the queue's nodes),
        so that computing them may run in a worker thread."""
        searched: dict[str, str] = {}
        for method in self.methods:
            searched.update(getattr(method, "searched", {}))
        return {
            "nodes": [n for n in self.cluster.nodes() if not self.queue.owns(n.nodeclaim)],
            "nodepools": nodepools if nodepools is not None else self.nodepools(),
            "pdbs": list(self.pdbs.list()) if self.pdbs is not None else [],
            "now": self.clock.wall(),
            "busy": frozenset(self.queue.busy()),
            "searched": searched,
        }

    async def publish_blockers(self) -> None:
        """`karpy_disruption_blocked_nodes`: the nodes each method may not take now, per
        NodePool and taxonomy reason (every label combination set, zeros included, so a
        series drops to 0 rather than going stale). Computed in a worker thread: for 2,000
        nodes of 20 pods it takes about a second of pure Python. At most every
        `BLOCKERS_PERIOD` seconds."""
        now = self.clock.now()
        if now - self._blockers_at < BLOCKERS_PERIOD:
            return
        self._blockers_at = now
        nodepools = self.nodepools()
        verdicts = await run_off_loop(_all_verdicts, **self._verdict_inputs(nodepools))
        counts: dict[tuple[str, str, str], int] = {}
        for pool, found in verdicts.values():
            for v in found:
                if v.blocker is not None:
                    key = (pool, v.method, v.blocker.reason)
                    counts[key] = counts.get(key, 0) + 1
        for pool in {p for p, _, _ in counts} | set(nodepools):
            for method in METHODS:
                for reason in REASONS:
                    metrics.BLOCKED_NODES.labels(pool, method, reason).set(
                        counts.get((pool, method, reason), 0)
                    )

    # -- crash recovery ---------------------------------------------------------------------------

    async def clear_stale_disruptions(self) -> None:
        """Remove the disrupted taint and `DisruptionReason` left on nodes nothing is disrupting."""
        busy = self.queue.busy()
        for node in self.cluster.nodes():
            if not node.managed or node.key in busy or node.marked_for_deletion:
                continue
            if node.node is not None and is_deleting(node.node):
                continue
            if self.queue.owns(node.nodeclaim):
                continue  # a persisted command: the queue finishes or rolls it back
            tainted = has_disrupted_taint(node.node)
            marked = get_condition(node.nodeclaim, cond.NODECLAIM_DISRUPTION_REASON)
            if not tainted and marked is None:
                continue
            if marked is not None and self._recent(marked):
                continue
            log.info(
                "removing stale disruption taint",
                Node={"name": node.node_name},
                NodeClaim={"name": node.nodeclaim_name},
            )
            if tainted and node.node_name:
                await set_disrupted_taint(self.client, node.node_name, present=False)
            if marked is not None and node.nodeclaim_name:
                await set_disruption_reason(self.client, self.clock, node.nodeclaim_name, None)

    def _recent(self, condition: Mapping[str, Any]) -> bool:
        since = parse_time(condition.get("lastTransitionTime"))
        return since is not None and (self.clock.wall() - since).total_seconds() < STALE_MARK_AFTER

    # -- candidates -------------------------------------------------------------------------------

    def nodepools(self) -> dict[str, NodePool]:
        out: dict[str, NodePool] = {}
        for raw in self.cluster.nodepools():
            try:
                pool = NodePool.model_validate(raw)
            except pydantic.ValidationError:
                continue  # nodepool.validation reports it
            out[pool.name] = pool
        return out

    def candidates(
        self,
        nodes: Iterable[StateNode],
        nodepools: Mapping[str, NodePool],
        *,
        now: datetime,
        publish: bool,
        graceful: bool = True,
    ) -> list[Candidate]:
        """Nodes that may be disrupted now; for the others, a `DisruptionBlocked` event."""
        pdbs = PdbLimits(self.pdbs.list() if self.pdbs is not None else ())
        busy = self.queue.busy()
        out: list[Candidate] = []
        for node in nodes:
            if self.queue.owns(node.nodeclaim):
                continue  # in a command persisted by a previous leader, not yet adopted
            try:
                out.append(
                    candidate(
                        node,
                        nodepools=nodepools,
                        pdbs=pdbs,
                        now=now,
                        in_flight=busy,
                        graceful=graceful,
                    )
                )
            except NotCandidate as blocked:
                if publish and blocked.publish:
                    found = blocked.blocker
                    self._blocked(node, found.message() if found else str(blocked))
        return out

    def _blocked(self, node: StateNode, message: str) -> None:
        if node.node is not None:
            self.events.publish(
                involved_node(node.node),
                reason=REASON_DISRUPTION_BLOCKED,
                message=message,
                dedupe=(_uid(node.node),),
            )
        if node.nodeclaim is not None:
            self.events.publish(
                involved_nodeclaim(node.nodeclaim),
                reason=REASON_DISRUPTION_BLOCKED,
                message=message,
                dedupe=(_uid(node.nodeclaim),),
            )

    def _blocked_pools(
        self,
        eligible: Sequence[Candidate],
        budgets: Mapping[str, BudgetState],
        nodepools: Mapping[str, NodePool],
        reason: str,
    ) -> None:
        """`DisruptionBlocked` on NodePools with eligible nodes and a budget of zero."""
        for name in sorted({c.nodepool_name for c in eligible}):
            state = budgets.get(name)
            if state is None or state.allowed != 0:
                continue
            pool = nodepools[name]
            self.events.publish(
                involved_nodepool({"metadata": {"name": name, "uid": pool.metadata.uid or ""}}),
                reason=REASON_DISRUPTION_BLOCKED,
                message=(
                    f"No allowed disruptions for disruption reason {reason} due to blocking budget"
                ),
                dedupe=(pool.metadata.uid or name, reason),
                window=60.0,
            )
