"""`DisruptionBlocked` on a candidate's objects, once per window."""

from __future__ import annotations

from typing import Any

from karpy.controllers.disruption.events import DedupingEvents, publish_blocked
from karpy.kube import EventRecorder
from karpy.kube.clock import FakeClock


class Recorded(EventRecorder):
    """Keeps what would be published (no client behind it)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def publish(self, obj: dict[str, Any], *, type: str, reason: str, message: str) -> None:
        self.seen.append((obj["kind"], reason, message))


def test_blocked_goes_to_the_node_and_its_claim_once_per_window() -> None:
    recorder = Recorded()
    clock = FakeClock()
    events = DedupingEvents(recorder, clock=clock)
    node = {"metadata": {"name": "n1", "uid": "u1"}}
    claim = {"metadata": {"name": "c1", "uid": "u2"}}
    for _ in range(2):
        publish_blocked(events, node, claim, message="no room", key="Drifted")
    publish_blocked(events, None, claim, message="no room", key="StaticDrift")
    assert recorder.seen == [
        ("Node", "DisruptionBlocked", "no room"),
        ("NodeClaim", "DisruptionBlocked", "no room"),
        ("NodeClaim", "DisruptionBlocked", "no room"),
    ]
