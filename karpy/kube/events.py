"""Kubernetes Events (core/v1), aggregated and rate limited like client-go's recorder.

`publish()` never blocks and never fails the caller: it queues the event for a background
sender (a runnable on every replica). An event equal to one sent recently (same object, type,
reason and message) bumps that Event's `count` and `lastTimestamp` instead of creating a new
object; each involved object has a token bucket (burst 25, one more every 5 minutes) so a hot
loop cannot flood the apiserver. Reasons are the caller's (Karpenter's reason strings).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import structlog

from karpy.kube.client import Client
from karpy.kube.clock import Clock, RealClock
from karpy.kube.errors import KubeError, NotFoundError, OutcomeUnknownError
from karpy.kube.ratelimit import TokenBucket
from karpy.kube.resources import EVENTS

__all__ = ["NORMAL", "WARNING", "EventRecorder"]

JSON = dict[str, Any]
NORMAL = "Normal"
WARNING = "Warning"
log = structlog.get_logger("karpy.kube.events")


@dataclass(frozen=True, slots=True)
class _Pending:
    involved: JSON
    type: str
    reason: str
    message: str


@dataclass(slots=True)
class _Sent:
    namespace: str
    name: str
    count: int
    last_sent: float


def _timestamp(clock: Clock) -> str:
    return clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(obj: JSON) -> JSON:
    """The `involvedObject` for `obj` (which carries apiVersion, kind and metadata)."""
    meta = obj.get("metadata") or {}
    ref: JSON = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return ref


class EventRecorder:
    """Queues events and sends them from `start()`; a runnable for the manager."""

    needs_leader_election = False

    def __init__(
        self,
        client: Client,
        *,
        component: str = "karpenter",
        instance: str = "",
        clock: Clock | None = None,
        aggregate_window: float = 600.0,
        burst: int = 25,
        refill_seconds: float = 300.0,
        max_pending: int = 1000,
        cache_size: int = 4096,
    ) -> None:
        self.client = client
        self.component = component
        self.instance = instance
        self.clock = clock or RealClock()
        self.aggregate_window = aggregate_window
        self.burst = burst
        self.refill_seconds = refill_seconds
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=max_pending)
        self._sent: OrderedDict[tuple[str, ...], _Sent] = OrderedDict()
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._cache_size = cache_size
        self.dropped = 0

    def publish(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        """Queue an event about `obj`; dropped (and counted) when rate limited or backlogged."""
        if type not in (NORMAL, WARNING):
            raise ValueError(f"event type must be {NORMAL!r} or {WARNING!r}, not {type!r}")
        involved = object_reference(obj)
        if not self._allow(involved):
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(_Pending(involved, type, reason, message))
        except asyncio.QueueFull:
            self.dropped += 1

    def _allow(self, involved: JSON) -> bool:
        key = (
            involved.get("uid")
            or f"{involved.get('kind')}/{involved.get('namespace')}/{involved.get('name')}"
        )
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(qps=1.0 / self.refill_seconds, burst=self.burst, clock=self.clock)
            self._buckets[key] = bucket
            if len(self._buckets) > self._cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.try_take()

    async def start(self, stop: asyncio.Event) -> None:
        """Send queued events until `stop`, then flush what is queued (best effort)."""
        stopper = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                getter = asyncio.ensure_future(self._queue.get())
                await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    break
                await self._send(getter.result())
            while not self._queue.empty():
                await self._send(self._queue.get_nowait())
        finally:
            stopper.cancel()

    async def flush(self) -> None:
        """Send everything queued now (for callers without a running recorder, and tests)."""
        while not self._queue.empty():
            await self._send(self._queue.get_nowait())

    async def _send(self, pending: _Pending) -> None:
        try:
            await self._send_one(pending)
        except (KubeError, TimeoutError) as exc:
            log.warning(
                "could not record event",
                reason=pending.reason,
                object=pending.involved.get("name"),
                error=str(exc),
            )

    async def _send_one(self, pending: _Pending) -> None:
        involved = pending.involved
        key = (
            str(involved.get("uid") or ""),
            str(involved.get("kind")),
            str(involved.get("namespace") or ""),
            str(involved.get("name")),
            pending.type,
            pending.reason,
            pending.message,
        )
        now = self.clock.now()
        stamp = _timestamp(self.clock)
        sent = self._sent.get(key)
        if sent is not None and now - sent.last_sent <= self.aggregate_window:
            try:
                async with asyncio.timeout(10):
                    await self.client.patch(
                        EVENTS,
                        sent.name,
                        {"count": sent.count + 1, "lastTimestamp": stamp},
                        namespace=sent.namespace,
                    )
                sent.count += 1
                sent.last_sent = now
                self._sent.move_to_end(key)
                return
            except NotFoundError:
                del self._sent[key]
        namespace = involved.get("namespace") or "default"
        name = f"{involved.get('name')}.{int(self.clock.wall().timestamp() * 1e9):x}"
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "reason": pending.reason,
            "message": pending.message,
            "type": pending.type,
            "source": {"component": self.component},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
        }
        try:
            async with asyncio.timeout(10):
                await self.client.create(EVENTS, body)
        except OutcomeUnknownError:
            return  # never re-sent: a duplicate event is noise, a lost one is tolerable
        self._sent[key] = _Sent(namespace=namespace, name=name, count=1, last_sent=now)
        if len(self._sent) > self._cache_size:
            self._sent.popitem(last=False)
