"""The disruption loop's events, in Karpenter's words, each published at most once per
dedupe window (the loop looks every 10 seconds; people need one line, not a stream)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from karpy.kube import NORMAL, Clock, EventRecorder

__all__ = [
    "REASON_DISRUPTION_BLOCKED",
    "REASON_UNCONSOLIDATABLE",
    "UNCONSOLIDATABLE_WINDOW",
    "DedupingEvents",
    "involved_node",
    "involved_nodeclaim",
    "involved_nodepool",
    "publish_blocked",
    "publish_unconsolidatable",
]

DEFAULT_DEDUPE: Final = 120.0
REASON_DISRUPTION_BLOCKED: Final = "DisruptionBlocked"
REASON_UNCONSOLIDATABLE: Final = "Unconsolidatable"
UNCONSOLIDATABLE_WINDOW: Final = 900.0
"""Karpenter repeats an `Unconsolidatable` event for a node at most every 15 minutes."""
JSON = dict[str, Any]


def _involved(obj: Mapping[str, Any] | None, *, api_version: str, kind: str) -> JSON:
    meta = (obj or {}).get("metadata") or {}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": meta.get("name", ""), "uid": meta.get("uid", "")},
    }


def involved_node(node: Mapping[str, Any] | None) -> JSON:
    return _involved(node, api_version="v1", kind="Node")


def involved_nodeclaim(claim: Mapping[str, Any] | None) -> JSON:
    return _involved(claim, api_version="karpenter.sh/v1", kind="NodeClaim")


def involved_nodepool(pool: Mapping[str, Any] | None) -> JSON:
    return _involved(pool, api_version="karpenter.sh/v1", kind="NodePool")


class DedupingEvents:
    """Publishes through an `EventRecorder`, skipping repeats of the same key within a window."""

    def __init__(self, recorder: EventRecorder, *, clock: Clock, max_entries: int = 10_000):
        self.recorder = recorder
        self.clock = clock
        self.max_entries = max_entries
        self._sent: dict[tuple[str, ...], float] = {}

    def publish(
        self,
        obj: JSON,
        *,
        reason: str,
        message: str,
        dedupe: tuple[str, ...],
        window: float = DEFAULT_DEDUPE,
        type: str = NORMAL,
    ) -> None:
        now = self.clock.now()
        key = (reason, *dedupe)
        last = self._sent.get(key)
        if last is not None and now - last < window:
            return
        if len(self._sent) >= self.max_entries:
            self._sent = {k: t for k, t in self._sent.items() if now - t < window}
            if len(self._sent) >= self.max_entries:
                self._sent.clear()
        self._sent[key] = now
        self.recorder.publish(obj, type=type, reason=reason, message=message)


def publish_blocked(
    events: DedupingEvents,
    node: Mapping[str, Any] | None,
    nodeclaim: Mapping[str, Any] | None,
    *,
    message: str,
    key: str,
) -> None:
    """`DisruptionBlocked` on a candidate's Node and NodeClaim (whichever exist), once per
    window for each object and `key` (the method's reason)."""
    for obj, ref in ((node, involved_node(node)), (nodeclaim, involved_nodeclaim(nodeclaim))):
        if obj is not None:
            meta = obj.get("metadata") or {}
            events.publish(
                ref,
                reason=REASON_DISRUPTION_BLOCKED,
                message=message,
                dedupe=(ref["kind"], str(meta.get("uid") or meta.get("name") or ""), key),
            )


def publish_unconsolidatable(
    events: DedupingEvents,
    node: Mapping[str, Any] | None,
    nodeclaim: Mapping[str, Any] | None,
    *,
    message: str,
) -> None:
    """`Unconsolidatable` on a node and its NodeClaim (whichever exist): why consolidation
    leaves it, at most once per object every 15 minutes whatever the message, as Karpenter."""
    for obj, ref in ((node, involved_node(node)), (nodeclaim, involved_nodeclaim(nodeclaim))):
        if obj is not None:
            meta = obj.get("metadata") or {}
            events.publish(
                ref,
                reason=REASON_UNCONSOLIDATABLE,
                message=message,
                dedupe=(ref["kind"], str(meta.get("uid") or meta.get("name") or "")),
                window=UNCONSOLIDATABLE_WINDOW,
            )
