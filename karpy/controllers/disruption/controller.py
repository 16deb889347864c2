"""`disruption`: the singleton loop that removes empty nodes within their NodePools' budgets.

Every 10 seconds (at once again after it acted), once cluster state has synced:

1. Crash recovery: a node left with the `karpenter.sh/disrupted` taint or a NodeClaim left with
   the `DisruptionReason` condition, that no command is disrupting and that is not being deleted,
   gets them removed (a restart between marking and deleting leaves them behind).
2. Emptiness: candidates (see `candidates`) that are `Consolidatable` and empty, in NodePools
   whose consolidation is not disabled, are taken oldest first, as many per NodePool as its
   budget for reason `Empty` still allows. After the validation delay (15 s, as Karpenter's) the
   choice is re-checked: every node must still be an empty, consolidatable candidate within a
   freshly computed budget; the rest are dropped.
3. The command: the nodes are tainted `karpenter.sh/disrupted:NoSchedule` and their NodeClaims
   get `DisruptionReason=True` (reason `Empty`), they are marked for deletion in cluster state,
   and their NodeClaims are deleted; the termination controllers drain them.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import pydantic
import structlog

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import get_condition, is_condition_true, is_deleting
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import TAINT_DISRUPTED_KEY, TAINT_EFFECT_NO_SCHEDULE
from karpy.controllers.common.metrics import NODECLAIMS_DISRUPTED_TOTAL
from karpy.controllers.common.status import patch_status
from karpy.controllers.disruption import metrics
from karpy.controllers.disruption.budgets import BudgetState, budget_states
from karpy.controllers.disruption.candidates import (
    Candidate,
    NotCandidate,
    PdbLimits,
    candidate,
    quoted,
)
from karpy.controllers.disruption.events import (
    DedupingEvents,
    involved_node,
    involved_nodeclaim,
    involved_nodepool,
)
from karpy.kube import (
    NODES,
    Client,
    Clock,
    ConflictError,
    EventRecorder,
    Informer,
    NotFoundError,
    RealClock,
    Result,
)
from karpy.kube.builder import Builder, singleton
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
CONSOLIDATION_TYPE_EMPTY: Final = "empty"
DECISION_DELETE: Final = "delete"
REASON_DISRUPTION_BLOCKED: Final = "DisruptionBlocked"
REASON_UNCONSOLIDATABLE: Final = "Unconsolidatable"
REASON_DISRUPTION_TERMINATING: Final = "DisruptionTerminating"
PATCH_ATTEMPTS: Final = 3

log = structlog.get_logger("karpy.controllers.disruption")

JSON = dict[str, Any]


def _name(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


def _has_disrupted_taint(node: Mapping[str, Any] | None) -> bool:
    return any(
        t.get("key") == TAINT_DISRUPTED_KEY
        for t in ((node or {}).get("spec") or {}).get("taints") or ()
    )


class DisruptionController:
    """Emptiness within budgets, with Karpenter's validation delay, events, logs and metrics."""

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
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.clock = clock or RealClock()
        self.events = DedupingEvents(events, clock=self.clock)
        self.pdbs = pdbs
        self.validation_delay = validation_delay
        self.polling_period = polling_period
        self._in_flight: set[str] = set()
        """Nodes (by key) a command is marking or deleting right now: the orchestration queue."""

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    # -- the loop ---------------------------------------------------------------------------------

    async def reconcile(self, _key: str) -> Result:
        if not self.cluster.synced():
            log.debug("waiting on cluster sync")
            return Result(requeue_after=UNSYNCED_RETRY)
        await self.clear_stale_disruptions()
        if await self.emptiness():
            return Result(requeue_after=0.0)
        return Result(requeue_after=self.polling_period)

    # -- crash recovery ---------------------------------------------------------------------------

    async def clear_stale_disruptions(self) -> None:
        """Remove the disrupted taint and `DisruptionReason` left on nodes nothing is disrupting."""
        for node in self.cluster.nodes():
            if not node.managed or node.key in self._in_flight or node.marked_for_deletion:
                continue
            if node.node is not None and is_deleting(node.node):
                continue
            tainted = _has_disrupted_taint(node.node)
            marked = get_condition(node.nodeclaim, cond.NODECLAIM_DISRUPTION_REASON)
            if not tainted and marked is None:
                continue
            log.info(
                "removing stale disruption taint",
                Node={"name": node.node_name},
                NodeClaim={"name": node.nodeclaim_name},
            )
            if tainted and node.node_name:
                await self._set_disrupted_taint(node.node_name, present=False)
            if marked is not None and node.nodeclaim_name:
                await self._set_disruption_reason(node.nodeclaim_name, None)

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
    ) -> list[Candidate]:
        """Nodes that may be disrupted now; for the others, a `DisruptionBlocked` event."""
        pdbs = PdbLimits(self.pdbs.list() if self.pdbs is not None else ())
        out: list[Candidate] = []
        for node in nodes:
            try:
                out.append(
                    candidate(
                        node,
                        nodepools=nodepools,
                        pdbs=pdbs,
                        now=now,
                        in_flight=tuple(self._in_flight),
                    )
                )
            except NotCandidate as blocked:
                if publish and blocked.publish:
                    self._blocked(node, str(blocked))
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

    def should_disrupt_empty(self, c: Candidate, *, publish: bool) -> bool:
        """Emptiness's filter: consolidation enabled, the node empty and Consolidatable."""
        if c.nodepool.spec.disruption.consolidate_after_duration() is None:
            if publish:
                message = f"NodePool {quoted(c.nodepool_name)} has consolidation disabled"
                for obj, ref in (
                    (c.node.node, involved_node(c.node.node)),
                    (c.node.nodeclaim, involved_nodeclaim(c.node.nodeclaim)),
                ):
                    self.events.publish(
                        ref,
                        reason=REASON_UNCONSOLIDATABLE,
                        message=message,
                        dedupe=(_uid(obj),),
                        window=900.0,
                    )
            return False
        if c.nodepool.is_static:
            return False
        if not is_condition_true(c.node.nodeclaim, cond.NODECLAIM_CONSOLIDATABLE):
            return False
        return c.is_empty()

    # -- emptiness --------------------------------------------------------------------------------

    def _budgets(
        self, nodes: Sequence[StateNode], nodepools: Mapping[str, NodePool], *, now: datetime
    ) -> dict[str, BudgetState]:
        states = budget_states(nodes, nodepools, reason=cond.DISRUPTION_REASON_EMPTY, now=now)
        reason = cond.DISRUPTION_REASON_EMPTY.lower()
        for name, state in states.items():
            metrics.ALLOWED_DISRUPTIONS.labels(name, reason).set(state.remaining)
        return states

    def _select(
        self,
        empty: Sequence[Candidate],
        budgets: Mapping[str, BudgetState],
        *,
        nodepools: Mapping[str, NodePool],
        publish: bool,
    ) -> list[Candidate]:
        remaining = {name: state.remaining for name, state in budgets.items()}
        chosen: list[Candidate] = []
        blocked: set[str] = set()
        for c in sorted(empty, key=lambda c: (c.created, c.name)):
            if remaining.get(c.nodepool_name, 0) <= 0:
                blocked.add(c.nodepool_name)
                continue
            remaining[c.nodepool_name] -= 1
            chosen.append(c)
        if publish:
            for name in sorted(blocked):
                if budgets[name].allowed == 0:
                    pool = nodepools[name]
                    self.events.publish(
                        involved_nodepool(
                            {"metadata": {"name": name, "uid": pool.metadata.uid or ""}}
                        ),
                        reason=REASON_DISRUPTION_BLOCKED,
                        message=(
                            "No allowed disruptions for disruption reason "
                            f"{cond.DISRUPTION_REASON_EMPTY} due to blocking budget"
                        ),
                        dedupe=(pool.metadata.uid or name, cond.DISRUPTION_REASON_EMPTY),
                        window=60.0,
                    )
        return chosen

    def _empty_candidates(self, *, publish: bool) -> tuple[list[Candidate], dict[str, BudgetState]]:
        now = self.clock.wall()
        nodes = self.cluster.nodes()
        nodepools = self.nodepools()
        found = self.candidates(nodes, nodepools, now=now, publish=publish)
        empty = [c for c in found if self.should_disrupt_empty(c, publish=publish)]
        metrics.ELIGIBLE_NODES.labels(cond.DISRUPTION_REASON_EMPTY.lower()).set(len(empty))
        budgets = self._budgets(nodes, nodepools, now=now)
        return self._select(empty, budgets, nodepools=nodepools, publish=publish), budgets

    async def emptiness(self) -> bool:
        """Delete empty nodes within budget; True when a command was started."""
        chosen, _ = self._empty_candidates(publish=True)
        if not chosen:
            return False
        await self.clock.sleep(self.validation_delay)
        if not self.cluster.synced():
            return False
        still, _ = self._empty_candidates(publish=False)
        keys = {c.key for c in chosen}
        valid = [c for c in still if c.key in keys]
        if len(valid) < len(chosen):
            metrics.FAILED_VALIDATIONS_TOTAL.labels(CONSOLIDATION_TYPE_EMPTY).inc(
                len(chosen) - len(valid)
            )
        if not valid:
            log.debug(
                "abandoning empty node consolidation attempt due to pod churn, command is no "
                "longer valid"
            )
            return False
        await self.delete(valid, reason=cond.DISRUPTION_REASON_EMPTY)
        return True

    # -- the command ------------------------------------------------------------------------------

    async def delete(self, candidates: Sequence[Candidate], *, reason: str) -> None:
        """Mark the candidates disrupted and delete their NodeClaims."""
        command_id = str(uuid.uuid4())
        log.info(
            f"disrupting node(s) via {DECISION_DELETE}",
            **{
                "command-id": command_id,
                "reason": reason.lower(),
                "decision": DECISION_DELETE,
                "disrupted-node-count": len(candidates),
                "replacement-node-count": 0,
                "pod-count": 0,
                "disrupted-nodes": [
                    {
                        "Node": {"name": c.node.node_name},
                        "NodeClaim": {"name": c.nodeclaim_name},
                        "NodePool": {"name": c.nodepool_name},
                        "capacity-type": c.capacity_type,
                        "instance-type": c.instance_type,
                    }
                    for c in candidates
                ],
            },
        )
        metrics.DECISIONS_TOTAL.labels(
            DECISION_DELETE, reason.lower(), CONSOLIDATION_TYPE_EMPTY
        ).inc()
        keys = [c.key for c in candidates]
        self._in_flight.update(keys)
        try:
            marked: list[Candidate] = []
            for c in candidates:
                if await self._mark_disrupted(c, reason):
                    marked.append(c)
            self.cluster.mark_for_deletion(*(c.key for c in marked))
            for c in marked:
                await self._delete_nodeclaim(c, reason)
        finally:
            self._in_flight.difference_update(keys)

    async def _mark_disrupted(self, c: Candidate, reason: str) -> bool:
        try:
            if c.node.node_name:
                await self._set_disrupted_taint(c.node.node_name, present=True)
            await self._set_disruption_reason(c.nodeclaim_name, reason)
        except (NotFoundError, ConflictError) as exc:
            log.info(
                "could not mark node as disrupted; leaving it",
                Node={"name": c.node.node_name},
                error=str(exc),
            )
            await self._unmark(c)
            return False
        return True

    async def _unmark(self, c: Candidate) -> None:
        try:
            if c.node.node_name:
                await self._set_disrupted_taint(c.node.node_name, present=False)
            await self._set_disruption_reason(c.nodeclaim_name, None)
        except (NotFoundError, ConflictError):
            pass
        self.cluster.unmark_for_deletion(c.key)

    async def _delete_nodeclaim(self, c: Candidate, reason: str) -> None:
        claim = c.node.nodeclaim or {}
        uid = ((claim.get("metadata") or {}).get("uid")) or None
        try:
            await self.client.delete(NODECLAIMS, c.nodeclaim_name, uid=uid)
        except NotFoundError:
            return
        except ConflictError:  # a new NodeClaim took the name: not ours to delete
            await self._unmark(c)
            return
        title = reason[:1].upper() + reason[1:]
        if c.node.node is not None:
            self.events.publish(
                involved_node(c.node.node),
                reason=REASON_DISRUPTION_TERMINATING,
                message=f"Disrupting Node: {title}",
                dedupe=(_uid(c.node.node), reason),
            )
        self.events.publish(
            involved_nodeclaim(claim),
            reason=REASON_DISRUPTION_TERMINATING,
            message=f"Disrupting NodeClaim: {title}",
            dedupe=(_uid(claim), reason),
        )
        NODECLAIMS_DISRUPTED_TOTAL.labels(reason.lower(), c.nodepool_name, c.capacity_type).inc()

    # -- writes with optimistic locking ---------------------------------------------------------

    async def _set_disrupted_taint(self, node_name: str, *, present: bool) -> None:
        await _retry_update(
            lambda: self.client.get(NODES, node_name),
            lambda node: self._patch_taints(node, present=present),
        )

    async def _patch_taints(self, node: JSON, *, present: bool) -> None:
        taints = list((node.get("spec") or {}).get("taints") or ())
        has = any(t.get("key") == TAINT_DISRUPTED_KEY for t in taints)
        if has == present:
            return
        if present:
            taints.append({"key": TAINT_DISRUPTED_KEY, "effect": TAINT_EFFECT_NO_SCHEDULE})
        else:
            taints = [t for t in taints if t.get("key") != TAINT_DISRUPTED_KEY]
        meta = node.get("metadata") or {}
        await self.client.patch(
            NODES,
            _name(node),
            {
                "metadata": {"resourceVersion": meta.get("resourceVersion")},
                "spec": {"taints": taints or None},
            },
        )

    async def _set_disruption_reason(self, claim_name: str, reason: str | None) -> None:
        if not claim_name:
            return

        async def patch(claim: JSON) -> None:
            conditions = Conditions.of(claim, now=self.clock.wall())
            if reason is None:
                conditions.remove(cond.NODECLAIM_DISRUPTION_REASON)
            else:
                conditions.set(
                    cond.NODECLAIM_DISRUPTION_REASON,
                    cond.STATUS_TRUE,
                    reason=reason,
                    message=reason,
                )
            if not conditions.differs_from(claim):
                return
            await patch_status(
                self.client,
                resource=NODECLAIMS,
                obj=claim,
                status={"conditions": conditions.items},
            )

        await _retry_update(lambda: self.client.get(NODECLAIMS, claim_name), patch)


def _uid(obj: Mapping[str, Any] | None) -> str:
    meta = (obj or {}).get("metadata") or {}
    return str(meta.get("uid") or meta.get("name") or "")


async def _retry_update(
    fetch: Callable[[], Awaitable[JSON]],
    apply: Callable[[JSON], Awaitable[None]],
) -> None:
    """Read fresh and write with the read's resourceVersion; retry on conflicts."""
    for attempt in range(PATCH_ATTEMPTS):
        obj = await fetch()
        try:
            await apply(obj)
            return
        except ConflictError:
            if attempt == PATCH_ATTEMPTS - 1:
                raise
