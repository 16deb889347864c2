"""The orchestration queue: runs the commands the disruption methods decide, and finishes or
rolls back the commands a previous leader left half done.

`start(command)`:

1. refuse if a candidate is already in a command;
2. mark: annotate each candidate's NodeClaim with the command (id, replacement count, start
   time, see `marks`), taint its Node `karpenter.sh/disrupted:NoSchedule` and set
   `DisruptionReason` with the reason;
3. launch the replacements (NodeClaims annotated with the command id);
4. mark the candidates for deletion in cluster state (after launching, so that the provisioner
   sees the replacements coming for the candidates' pods and launches nothing twice).

`step()` (the `disruption.queue` singleton, every second while commands run): a command whose
replacements are all Initialized deletes its candidates' NodeClaims (the termination controllers
drain them); a replacement deleted, or the command older than its timeout (10 minutes, as
Karpenter's floor), fails the command: the candidates' taint, condition and annotations are
removed and they are unmarked; the replacements are kept, as Karpenter keeps them (one that never
registers is removed by the registration timeout; one that registers but never initializes stays,
as in Karpenter, until it initializes or is deleted). While a kept replacement has not
initialized, the disruption simulation will not move pods to it, so the candidate is not
disrupted again at once.

Crash recovery: a candidate NodeClaim annotated with a command this process does not run is
adopted. If every replacement the annotation promises exists, the command resumes (waits and
deletes, with the timeout counted from the persisted start); otherwise the launch was cut short
and the command is rolled back. A delete-only command (nothing launched to wait for) is adopted
only once cluster state has synced, and first re-validated through `revalidate` (the disruption
loop's validation of the method that decided it): one that no longer holds is rolled back
instead of deleting nodes on a decision the cluster has moved past. Replacements are only ever
created by `start`, so a command never launches twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import structlog

from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import format_time, is_condition_true, is_deleting, label, parse_time
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from karpy.controllers.common.metrics import NODECLAIMS_DISRUPTED_TOTAL
from karpy.controllers.disruption import metrics
from karpy.controllers.disruption.events import DedupingEvents, involved_node, involved_nodeclaim
from karpy.controllers.disruption.methods.base import Command
from karpy.controllers.disruption.orchestration.marks import (
    ANNOTATION_COMMAND,
    ANNOTATION_METHOD,
    ANNOTATION_REPLACEMENT_FOR,
    ANNOTATION_REPLACEMENTS,
    ANNOTATION_SAVINGS,
    ANNOTATION_STARTED,
    annotation,
    set_command_annotations,
    set_disrupted_taint,
    set_disruption_reason,
)
from karpy.controllers.provisioning.metrics import NODECLAIMS_CREATED
from karpy.controllers.provisioning.nodeclaims import nodeclaim_for
from karpy.kube import (
    Client,
    Clock,
    ConflictError,
    KubeError,
    NotFoundError,
    RealClock,
    Result,
)
from karpy.kube.builder import Builder, singleton
from karpy.state import Cluster, StateNode

__all__ = [
    "COMMAND_TIMEOUT",
    "MAX_COMMAND_TIMEOUT",
    "QUEUE_NAME",
    "OrchestrationQueue",
    "QueueController",
    "Revalidate",
    "command_timeout",
    "method_of",
]

QUEUE_NAME: Final = "disruption.queue"
COMMAND_TIMEOUT: Final = 600.0
"""The shortest a command may wait for its replacements (Karpenter's `minRetryDuration`)."""
MAX_COMMAND_TIMEOUT: Final = 3600.0
"""The longest (Karpenter's `maxRetryDuration`)."""
TIMEOUT_PER_CANDIDATE: Final = 0.08
"""Karpenter's `retryDurationScale`: the wait grows by 80 ms per candidate in flight."""
MARK_CONCURRENCY: Final = 8
"""Candidates of one command marked at once."""
BUSY_PERIOD: Final = 1.0
IDLE_PERIOD: Final = 5.0
REASON_DISRUPTION_TERMINATING: Final = "DisruptionTerminating"

log = structlog.get_logger("karpy.controllers.disruption.queue")

JSON = dict[str, Any]

Revalidate = Callable[[str, Sequence[StateNode]], Awaitable[bool]]
"""(disruption reason, the candidates' nodes) -> whether deleting them still holds."""


def command_timeout(
    queued: int, *, floor: float = COMMAND_TIMEOUT, ceiling: float = MAX_COMMAND_TIMEOUT
) -> float:
    """How long a command may wait for its replacements when `queued` candidate nodes are in
    flight: 80 ms each, clamped to [10 minutes, 1 hour], as Karpenter's queue."""
    return min(max(TIMEOUT_PER_CANDIDATE * queued, floor), max(ceiling, floor))


@dataclass(frozen=True, slots=True)
class _Target:
    """A candidate as the queue needs it: enough to unmark or delete it, also after a restart."""

    key: str
    nodeclaim: str
    uid: str
    node_name: str
    nodepool: str
    capacity_type: str


def _target_of(claim: Mapping[str, Any], key: str | None = None) -> _Target:
    meta = claim.get("metadata") or {}
    status = claim.get("status") or {}
    name = str(meta.get("name") or "")
    return _Target(
        key=key or name,
        nodeclaim=name,
        uid=str(meta.get("uid") or ""),
        node_name=str(status.get("nodeName") or ""),
        nodepool=label(claim, LABEL_NODEPOOL) or "",
        capacity_type=label(claim, LABEL_CAPACITY_TYPE) or "",
    )


@dataclass(slots=True)
class _Running:
    id: str
    reason: str
    consolidation_type: str
    decision: str
    targets: list[_Target]
    replacements: list[str]
    started: datetime
    done: set[str] = field(default_factory=set)
    finishing: bool = False


class OrchestrationQueue:
    """The commands in flight, their start, their progress and their recovery."""

    def __init__(
        self,
        *,
        client: Client,
        cluster: Cluster,
        events: DedupingEvents,
        clock: Clock | None = None,
        timeout: float = COMMAND_TIMEOUT,
        max_timeout: float = MAX_COMMAND_TIMEOUT,
        revalidate: Revalidate | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.events = events
        self.clock = clock or RealClock()
        self.timeout = timeout
        """The floor of the command timeout (`command_timeout`)."""
        self.max_timeout = max_timeout
        self.revalidate = revalidate
        """Set by the disruption loop: re-validates a previous leader's delete-only command."""
        self._running: dict[str, _Running] = {}
        self._starting: set[str] = set()
        """Command ids being started (their annotations may be visible before their
        replacements are): recovery leaves them alone."""
        self._busy: set[str] = set()
        """Node keys and NodeClaim names of the candidates of commands starting or running."""

    # -- what is in flight ------------------------------------------------------------------------

    def busy(self) -> frozenset[str]:
        """The node keys (and NodeClaim names) of every candidate in a command."""
        return frozenset(self._busy)

    def __len__(self) -> int:
        return len(self._running)

    def command_timeout(self) -> float:
        """The timeout for the commands in flight, scaled by how many candidates they hold."""
        queued = sum(len(r.targets) for r in self._running.values())
        return command_timeout(queued, floor=self.timeout, ceiling=self.max_timeout)

    def owns(self, claim: Mapping[str, Any] | None) -> bool:
        """The NodeClaim is a candidate of a command, here or persisted by a previous leader
        (recovery, not the stale-mark sweep, deals with those)."""
        return annotation(claim, ANNOTATION_COMMAND) is not None

    # -- start ------------------------------------------------------------------------------------

    async def start(self, command: Command) -> bool:
        """Mark, launch and (for a delete) delete; False when the command could not start."""
        if command.is_noop:
            return False
        keys = {c.key for c in command.candidates} | {c.nodeclaim_name for c in command.candidates}
        if keys & self._busy:
            log.info("candidate already being disrupted; dropping command")
            return False
        command_id = str(uuid.uuid4())
        self._starting.add(command_id)
        self._busy.update(keys)
        try:
            return await self._start(command_id, command)
        finally:
            self._starting.discard(command_id)
            if command_id not in self._running:
                self._busy.difference_update(keys)

    async def _start(self, command_id: str, command: Command) -> bool:
        started = self.clock.wall()
        self._log_command(command_id, command)
        metrics.DECISIONS_TOTAL.labels(
            command.decision, command.reason.lower(), command.consolidation_type
        ).inc()
        for pool in sorted({c.nodepool_name for c in command.candidates}):
            metrics.DECISIONS_BY_NODEPOOL_TOTAL.labels(
                pool, command.decision, command.reason.lower(), command.consolidation_type
            ).inc()
        if command.savings is not None and command.savings > 0:
            metrics.SAVINGS_TOTAL.labels(command.reason.lower(), command.consolidation_type).inc(
                command.savings
            )
        persisted = {
            ANNOTATION_COMMAND: command_id,
            ANNOTATION_REPLACEMENTS: str(len(command.replacements)),
            ANNOTATION_STARTED: format_time(started),
            ANNOTATION_METHOD: method_of(command),
        }
        if command.savings is not None:
            persisted[ANNOTATION_SAVINGS] = f"{command.savings:.6f}".rstrip("0").rstrip(".")
        targets: list[_Target] = []
        for c in command.candidates:
            target = _target_of(c.node.nodeclaim or {}, c.key)
            if not target.node_name and c.node.node_name:
                target = _Target(**{**_asdict(target), "node_name": c.node.node_name})
            targets.append(target)
        gate = asyncio.Semaphore(MARK_CONCURRENCY)
        outcomes = await asyncio.gather(
            *(self._mark(gate, t, persisted, command.reason) for t in targets),
            return_exceptions=True,
        )
        for target, outcome in zip(targets, outcomes, strict=True):
            if isinstance(outcome, NotFoundError | ConflictError):
                log.info(
                    "could not mark node as disrupted; abandoning command",
                    **{"command-id": command_id},
                    NodeClaim={"name": target.nodeclaim},
                    error=str(outcome),
                )
                await self._roll_back(targets, [], command=command, failed=True)
                return False
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        running = _Running(
            id=command_id,
            reason=command.reason,
            consolidation_type=command.consolidation_type,
            decision=command.decision,
            targets=targets,
            replacements=[],
            started=started,
        )
        for replacement in command.replacements:
            name = await self._launch(command_id, command, replacement)
            if name is None:
                await self._roll_back(targets, running.replacements, command=command, failed=True)
                return False
            running.replacements.append(name)
        self.cluster.mark_for_deletion(*(t.key for t in targets))
        self._running[command_id] = running
        if not running.replacements:
            await self._finish(running)
        return True

    async def _mark(
        self, gate: asyncio.Semaphore, target: _Target, persisted: Mapping[str, str], reason: str
    ) -> None:
        """Annotate, taint and condition one candidate (a few at a time: a command of tens of
        nodes marked one by one took tens of seconds on a loaded API server)."""
        async with gate:
            await set_command_annotations(self.client, target.nodeclaim, persisted)
            if target.node_name:
                await set_disrupted_taint(self.client, target.node_name, present=True)
            await set_disruption_reason(self.client, self.clock, target.nodeclaim, reason)

    async def _launch(self, command_id: str, command: Command, replacement: Any) -> str | None:
        nodepool = self.cluster.nodepool_informer.get(replacement.nodepool)
        if nodepool is None or is_deleting(nodepool):
            log.info(
                "nodepool is gone; not launching replacement",
                NodePool={"name": replacement.nodepool},
            )
            return None
        body = nodeclaim_for(replacement, nodepool)
        body["metadata"]["annotations"][ANNOTATION_REPLACEMENT_FOR] = command_id
        try:
            created = await self.client.create(NODECLAIMS, body)
        except KubeError as exc:
            log.error(
                "failed launching replacement nodeclaim",
                **{"command-id": command_id},
                error=str(exc),
            )
            return None
        self.cluster.update_nodeclaim(created)
        name = str((created.get("metadata") or {}).get("name") or "")
        self.cluster.record_plan(name, [v.key for v in replacement.pods])
        NODECLAIMS_CREATED.labels(
            command.reason.lower(),
            replacement.nodepool,
            str(replacement.min_values_relaxed).lower(),
        ).inc()
        log.info(
            "created replacement nodeclaim", **{"command-id": command_id}, NodeClaim={"name": name}
        )
        return name

    def _log_command(self, command_id: str, command: Command) -> None:
        fields: dict[str, Any] = {
            "command-id": command_id,
            "reason": command.reason.lower(),
            "decision": command.decision,
            "disrupted-node-count": len(command.candidates),
            "replacement-node-count": len(command.replacements),
            "pod-count": command.pods,
            "disrupted-nodes": [
                {
                    "Node": {"name": c.node.node_name},
                    "NodeClaim": {"name": c.nodeclaim_name},
                    "NodePool": {"name": c.nodepool_name},
                    "capacity-type": c.capacity_type,
                    "instance-type": c.instance_type,
                }
                for c in command.candidates
            ],
        }
        if command.replacements:
            fields["replacement-nodes"] = [
                {"instance-types": [t.name for t in r.instance_types[:5]], "NodePool": r.nodepool}
                for r in command.replacements
            ]
        if command.savings is not None:
            fields["savings"] = round(command.savings, 6)
        log.info(f"disrupting node(s) via {command.decision}", **fields)

    # -- progress ---------------------------------------------------------------------------------

    async def step(self) -> None:
        """Advance every command; adopt commands a previous leader left behind. Needs the
        NodeClaim and Node caches only: a replacement that has not launched yet keeps cluster
        state unsynced, and must not hold back its own command's timeout."""
        if not (
            self.cluster.nodeclaim_informer.has_synced() and self.cluster.node_informer.has_synced()
        ):
            return
        await self._recover()
        for running in list(self._running.values()):
            await self._advance(running)

    async def _advance(self, running: _Running) -> None:
        states = [await self._replacement_state(name) for name in running.replacements]
        if any(s == "gone" for s in states):
            gone = [n for n, s in zip(running.replacements, states, strict=True) if s == "gone"]
            await self._fail(running, f"replacement nodeclaim(s) {', '.join(gone)} deleted")
            return
        if all(s == "initialized" for s in states):
            await self._finish(running)
            return
        timeout = self.command_timeout()
        if self.clock.wall() - running.started > timedelta(seconds=timeout):
            waiting = [
                n for n, s in zip(running.replacements, states, strict=True) if s != "initialized"
            ]
            await self._fail(
                running,
                f"replacement nodeclaim(s) {', '.join(waiting)} did not initialize "
                f"within {timeout:g}s",
            )

    async def _replacement_state(self, name: str) -> str:
        claim = self.cluster.nodeclaim_informer.get(name)
        if claim is None:  # the informer may lag behind our own create
            try:
                claim = await self.client.get(NODECLAIMS, name)
            except NotFoundError:
                return "gone"
        if is_deleting(claim):
            return "gone"
        return "initialized" if is_condition_true(claim, cond.NODECLAIM_INITIALIZED) else "waiting"

    async def _finish(self, running: _Running) -> None:
        """Delete the candidates, once: a delete command finishes from `start` while a queue
        step may already see it as running with nothing left to wait for."""
        if running.finishing:
            return
        running.finishing = True
        log.info(
            "deleting disruption candidates",
            **{"command-id": running.id},
            decision=running.decision,
            candidates=len(running.targets),
            replacements=running.replacements,
            seconds=round((self.clock.wall() - running.started).total_seconds(), 3),
        )
        for target in running.targets:
            if target.nodeclaim in running.done:
                continue
            await self._delete_candidate(target, running.reason)
            running.done.add(target.nodeclaim)
        self._forget(running)

    async def _delete_candidate(self, target: _Target, reason: str) -> None:
        try:
            await self.client.delete(NODECLAIMS, target.nodeclaim, uid=target.uid or None)
        except NotFoundError:
            return
        except ConflictError:  # a new NodeClaim took the name: not ours to delete
            return
        title = reason[:1].upper() + reason[1:]
        node = self.cluster.node_informer.get(target.node_name) if target.node_name else None
        if node is not None:
            self.events.publish(
                involved_node(node),
                reason=REASON_DISRUPTION_TERMINATING,
                message=f"Disrupting Node: {title}",
                dedupe=(target.node_name, reason),
            )
        claim_ref = {"metadata": {"name": target.nodeclaim, "uid": target.uid}}
        self.events.publish(
            involved_nodeclaim(claim_ref),
            reason=REASON_DISRUPTION_TERMINATING,
            message=f"Disrupting NodeClaim: {title}",
            dedupe=(target.uid or target.nodeclaim, reason),
        )
        NODECLAIMS_DISRUPTED_TOTAL.labels(
            reason.lower(), target.nodepool, target.capacity_type
        ).inc()

    async def _fail(self, running: _Running, why: str) -> None:
        """Give up on a running command: its candidates are untainted and unmarked and stay.
        Its replacements are kept, as Karpenter keeps them: one that never registers is left to
        the registration timeout, one that initializes late takes pods or is consolidated away
        like any node."""
        metrics.QUEUE_FAILURES_TOTAL.labels(
            running.decision, running.reason.lower(), running.consolidation_type
        ).inc()
        log.error(
            "failed terminating nodes while executing a disruption command; "
            "untainted the candidates and kept the replacements",
            **{"command-id": running.id},
            reason=why,
            decision=running.decision,
            candidates=[
                {"NodeClaim": {"name": t.nodeclaim}, "Node": {"name": t.node_name}}
                for t in running.targets
            ],
            replacements=running.replacements,
        )
        await self._roll_back(running.targets, (), command=None, failed=False)
        self._forget(running)

    def _forget(self, running: _Running) -> None:
        self._running.pop(running.id, None)
        for t in running.targets:
            self._busy.discard(t.key)
            self._busy.discard(t.nodeclaim)

    async def _roll_back(
        self,
        targets: Sequence[_Target],
        replacements: Iterable[str],
        *,
        command: Command | None,
        failed: bool,
    ) -> None:
        """Delete the replacements, then unmark the candidates (replacements first: a crash in
        between leaves marks that recovery rolls back again, never a lone replacement)."""
        if failed and command is not None:
            metrics.QUEUE_FAILURES_TOTAL.labels(
                command.decision, command.reason.lower(), command.consolidation_type
            ).inc()
        for name in replacements:
            with contextlib.suppress(NotFoundError):
                await self.client.delete(NODECLAIMS, name)
        for target in targets:
            await self._unmark(target)

    async def _unmark(self, target: _Target) -> None:
        try:
            if target.node_name:
                await set_disrupted_taint(self.client, target.node_name, present=False)
        except (NotFoundError, ConflictError):
            pass
        try:
            await set_disruption_reason(self.client, self.clock, target.nodeclaim, None)
            await set_command_annotations(self.client, target.nodeclaim, None)
        except (NotFoundError, ConflictError):
            pass
        self.cluster.unmark_for_deletion(target.key)

    # -- recovery ---------------------------------------------------------------------------------

    async def _recover(self) -> None:
        claims = self.cluster.nodeclaim_informer.list()
        known = set(self._running) | self._starting
        orphans: dict[str, list[JSON]] = {}
        for claim in claims:
            command_id = annotation(claim, ANNOTATION_COMMAND)
            if command_id is None or command_id in known or is_deleting(claim):
                continue
            orphans.setdefault(command_id, []).append(claim)
        for command_id, candidates in orphans.items():
            if _int(annotation(candidates[0], ANNOTATION_REPLACEMENTS)) == 0 and (
                not self.cluster.synced()
            ):
                continue  # re-validated on complete state only
            await self._adopt(command_id, candidates, claims)

    async def _adopt(self, command_id: str, candidates: list[JSON], claims: Sequence[JSON]) -> None:
        first = candidates[0]
        expected = _int(annotation(first, ANNOTATION_REPLACEMENTS))
        started = parse_time(annotation(first, ANNOTATION_STARTED)) or self.clock.wall()
        reason = _disruption_reason(first)
        replacements = [
            str((c.get("metadata") or {}).get("name"))
            for c in claims
            if annotation(c, ANNOTATION_REPLACEMENT_FOR) == command_id and not is_deleting(c)
        ]
        targets = [self._target_in_state(c) for c in candidates]
        running = _Running(
            id=command_id,
            reason=reason,
            consolidation_type="",
            decision="replace" if expected else "delete",
            targets=targets,
            replacements=replacements,
            started=started,
        )
        if expected is None or len(replacements) != expected:
            log.info(
                "rolling back a disruption command a previous leader left half launched",
                **{"command-id": command_id},
                replacements=replacements,
                expected=expected,
            )
            await self._roll_back(targets, replacements, command=None, failed=False)
            return
        if not expected and not await self._still_valid(running):
            log.info(
                "a previous leader's delete command no longer holds; rolling back",
                **{"command-id": command_id},
                candidates=[t.nodeclaim for t in targets],
                reason=reason,
            )
            await self._roll_back(targets, [], command=None, failed=False)
            return
        log.info(
            "resuming a disruption command of a previous leader",
            **{"command-id": command_id},
            candidates=[t.nodeclaim for t in targets],
            replacements=replacements,
        )
        self._running[command_id] = running
        for t in targets:
            self._busy.update((t.key, t.nodeclaim))
        self.cluster.mark_for_deletion(*(t.key for t in targets))

    async def _still_valid(self, running: _Running) -> bool:
        """A delete-only command re-validated on today's cluster (kept as is without a
        validator, as a queue used alone)."""
        if self.revalidate is None:
            return True
        nodes = [self.cluster.node_for_nodeclaim(t.nodeclaim) for t in running.targets]
        present = [n for n in nodes if n is not None]
        if len(present) != len(nodes):
            return False
        return await self.revalidate(running.reason, present)

    def _target_in_state(self, claim: Mapping[str, Any]) -> _Target:
        name = str((claim.get("metadata") or {}).get("name") or "")
        node = self.cluster.node_for_nodeclaim(name)
        target = _target_of(claim, node.key if node is not None else name)
        if node is not None and node.node_name and not target.node_name:
            target = _Target(**{**_asdict(target), "node_name": node.node_name})
        return target


def _asdict(target: _Target) -> dict[str, str]:
    return {
        "key": target.key,
        "nodeclaim": target.nodeclaim,
        "uid": target.uid,
        "node_name": target.node_name,
        "nodepool": target.nodepool,
        "capacity_type": target.capacity_type,
    }


_METHOD_OF_REASON: Final = {
    cond.DISRUPTION_REASON_EMPTY: "emptiness",
    cond.DISRUPTION_REASON_DRIFTED: "drift",
    cond.DISRUPTION_REASON_UNDERUTILIZED: "consolidation",
}


def method_of(command: Command) -> str:
    """The method as `karpy explain node` names it: `emptiness`, `drift`, or `consolidation`
    with its kind (`consolidation/single`, `consolidation/multi`)."""
    method = _METHOD_OF_REASON.get(command.reason, command.reason.lower())
    if method == "consolidation" and command.consolidation_type:
        return f"{method}/{command.consolidation_type}"
    return method


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _disruption_reason(claim: Mapping[str, Any]) -> str:
    for c in (claim.get("status") or {}).get("conditions") or ():
        if c.get("type") == cond.NODECLAIM_DISRUPTION_REASON:
            return str(c.get("reason") or "")
    return ""


class QueueController:
    """`disruption.queue`: steps the queue every second while commands run."""

    name: Final = QUEUE_NAME

    def __init__(self, queue: OrchestrationQueue) -> None:
        self.queue = queue
        self.clock = queue.clock

    def setup(self, builder: Builder[str]) -> None:
        singleton(builder)

    async def reconcile(self, _key: str) -> Result:
        await self.queue.step()
        return Result(requeue_after=BUSY_PERIOD if len(self.queue) else IDLE_PERIOD)
