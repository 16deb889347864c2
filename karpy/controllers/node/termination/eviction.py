"""The `eviction-queue` controller: evicts the pods a drain hands it, one API call per pod.

It runs apart from the node reconcile so a node with hundreds of pods never waits for them one
by one, and so a pod a PodDisruptionBudget protects is retried on its own backoff (100 ms
doubling to 10 s) instead of slowing the node's loop. Keys are pods by namespace, name and UID;
each remembers the earliest termination deadline of its node (the NodeClaim's
terminationGracePeriod) and the disruption reason for the drained-pods metric. A pod that is
already queued is not queued again, so the node loop re-offering it every second does not
bypass its backoff.

Per pod:

- gone, replaced (another UID), terminal or already terminating: nothing to do;
- its grace period no longer fits before the deadline: delete it with the time that is left
  (at least 1 s), bypassing PDBs and `karpenter.sh/do-not-disrupt` (event `Disrupted`);
- `karpenter.sh/do-not-disrupt`: never evicted; the node loop keeps waiting for it;
- otherwise the Eviction API with a UID precondition: 200 done (event `Evicted`), 404/409 done,
  429 (a PDB says no) event `FailedDraining` on the node and retry with backoff.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, NamedTuple

import structlog

from karpy.apis.objects import format_time, meta
from karpy.controllers.common.objects import object_ref
from karpy.controllers.node.termination import metrics
from karpy.controllers.node.termination.pods import (
    has_do_not_disrupt,
    is_terminal,
    is_terminating,
    needs_force_delete,
    pod_grace_seconds,
)
from karpy.kube import (
    NORMAL,
    PODS,
    WARNING,
    ApiError,
    Client,
    Clock,
    ConflictError,
    EventRecorder,
    Informer,
    KubeError,
    NotFoundError,
    Result,
    ServerError,
    TooManyRequestsError,
)
from karpy.kube.builder import Builder, Enqueuer
from karpy.kube.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
)

__all__ = ["FORCEFUL_TERMINATION", "EvictionQueue", "PodKey"]

JSON = dict[str, Any]
Pod = Mapping[str, Any]
log = structlog.get_logger("karpy.controllers.node.termination")

FORCEFUL_TERMINATION: Final = "Forceful Termination"
"""The drained-pods reason when the NodeClaim carries no disruption reason."""
BASE_DELAY: Final = 0.1
MAX_DELAY: Final = 10.0
_MULTIPLE_PDBS: Final = "more than one PodDisruptionBudget"


class PodKey(NamedTuple):
    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, pod: Pod) -> PodKey:
        m = meta(pod)
        return cls(str(m.get("namespace") or ""), str(m.get("name") or ""), str(m.get("uid") or ""))


@dataclass(slots=True)
class _Entry:
    deadline: datetime | None
    reason: str


class EvictionQueue:
    """Evicts (or, past the deadline, deletes) queued pods; a leader-only runnable."""

    name: Final = "eviction-queue"

    def __init__(
        self,
        *,
        client: Client,
        pods: Informer,
        nodes: Informer,
        events: EventRecorder,
        clock: Clock,
        workers: int = 50,
        base_delay: float = BASE_DELAY,
        max_delay: float = MAX_DELAY,
    ) -> None:
        self.client = client
        self.pods = pods
        self.nodes = nodes
        self.events = events
        self.clock = clock
        self.workers = workers
        self.limiter = MaxOfRateLimiter[PodKey](
            ItemExponentialFailureRateLimiter[PodKey](base=base_delay, max_delay=max_delay),
            BucketRateLimiter[PodKey](qps=100.0, burst=1000, clock=clock),
        )
        self._queue = Enqueuer[PodKey]()
        self._entries: dict[PodKey, _Entry] = {}

    # -- intake -----------------------------------------------------------------------------------

    def add(self, pods: Iterable[Pod], *, deadline: datetime | None, reason: str) -> None:
        """Queue pods for eviction; a pod already queued only keeps the earlier deadline."""
        for pod in pods:
            key = PodKey.of(pod)
            entry = self._entries.get(key)
            if entry is None:
                self._entries[key] = _Entry(deadline, reason)
                self._queue.add(key)
            elif deadline is not None and (entry.deadline is None or deadline < entry.deadline):
                entry.deadline = deadline
                self._queue.add(key)  # look again now: it may need deleting sooner
        metrics.EVICTION_QUEUE_DEPTH.set(len(self._entries))

    def has(self, pod: Pod) -> bool:
        return PodKey.of(pod) in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def setup(self, builder: Builder[PodKey]) -> None:
        builder.workers(self.workers).rate_limiter(self.limiter)
        builder.enqueuer(self._queue)

    # -- reconcile --------------------------------------------------------------------------------

    async def reconcile(self, key: PodKey) -> Result | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        with structlog.contextvars.bound_contextvars(
            Pod={"namespace": key.namespace, "name": key.name}
        ):
            finished = await self._handle(key, entry)
        if finished:
            self._entries.pop(key, None)
            metrics.EVICTION_QUEUE_DEPTH.set(len(self._entries))
            return None
        return Result(requeue=True)

    async def _handle(self, key: PodKey, entry: _Entry) -> bool:
        pod = self.pods.get(f"{key.namespace}/{key.name}")
        if pod is None or meta(pod).get("uid") != key.uid or is_terminal(pod):
            return True
        now = self.clock.wall()
        if needs_force_delete(pod, entry.deadline, now):
            assert entry.deadline is not None
            return await self._force_delete(key, pod, entry.deadline, now)
        if is_terminating(pod) or has_do_not_disrupt(pod, now):
            return True
        return await self._evict(key, pod, entry)

    async def _force_delete(self, key: PodKey, pod: Pod, deadline: datetime, now: datetime) -> bool:
        grace = max(math.floor((deadline - now).total_seconds()), 1)
        pod_grace = pod_grace_seconds(pod)
        self.events.publish(
            object_ref(pod, kind="Pod", api_version="v1"),
            type=NORMAL,
            reason="Disrupted",
            message=(
                f"Deleting the pod to accommodate the terminationTime {format_time(deadline)} of "
                f"the node. The pod was granted {grace} seconds of grace-period of its "
                f"{pod_grace} terminationGracePeriodSeconds. This bypasses the PDB of the pod "
                "and the do-not-disrupt annotation."
            ),
        )
        try:
            await self.client.delete(
                PODS, key.name, namespace=key.namespace, uid=key.uid, grace_period_seconds=grace
            )
        except (NotFoundError, ConflictError):
            return True
        log.info(
            "deleting pod",
            **{
                "pod.terminationGracePeriodSeconds": pod_grace,
                "delete.gracePeriodSeconds": grace,
                "nodeclaim.expirationTime": format_time(deadline),
            },
        )
        return True

    async def _evict(self, key: PodKey, pod: Pod, entry: _Entry) -> bool:
        try:
            await self.client.evict(key.name, namespace=key.namespace, uid=key.uid)
        except (NotFoundError, ConflictError) as exc:
            metrics.POD_EVICTION_REQUESTS.labels(str(exc.status)).inc()
            return True
        except TooManyRequestsError as exc:
            metrics.POD_EVICTION_REQUESTS.labels(str(exc.status)).inc()
            self._failed_draining(pod, f"evicting pod {key.namespace}/{key.name} violates a PDB")
            return False
        except ServerError as exc:
            metrics.POD_EVICTION_REQUESTS.labels(str(exc.status)).inc()
            if _MULTIPLE_PDBS in exc.message:
                self._failed_draining(
                    pod, f"evicting pod {key.namespace}/{key.name}: {_MULTIPLE_PDBS} matches it"
                )
            else:
                log.error("failed evicting pod", error=str(exc))
            return False
        except KubeError as exc:
            if isinstance(exc, ApiError):
                metrics.POD_EVICTION_REQUESTS.labels(str(exc.status)).inc()
            log.error("failed evicting pod", error=str(exc))
            return False
        metrics.POD_EVICTION_REQUESTS.labels("200").inc()
        metrics.PODS_DRAINED.labels(entry.reason).inc()
        self.events.publish(
            object_ref(pod, kind="Pod", api_version="v1"),
            type=NORMAL,
            reason="Evicted",
            message=f"Evicted pod: {entry.reason}",
        )
        return True

    def _failed_draining(self, pod: Pod, why: str) -> None:
        node_name = (pod.get("spec") or {}).get("nodeName") or ""
        node = self.nodes.get(node_name) if node_name else None
        target: JSON = (
            object_ref(node, kind="Node", api_version="v1")
            if node is not None
            else {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node_name}}
        )
        self.events.publish(
            target, type=WARNING, reason="FailedDraining", message=f"Failed to drain node, {why}"
        )
