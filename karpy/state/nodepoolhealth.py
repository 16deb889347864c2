"""NodePool registration health: the last few launch/registration outcomes of each NodePool.

The NodeClaim lifecycle records an outcome per NodeClaim (registered: success; launch failure or
registration timeout: failure). A NodePool whose last `BUFFER_SIZE` outcomes are at least
`UNHEALTHY_FRACTION` failures is unhealthy; the `nodepool.registrationhealth` controller turns
that into the `NodeRegistrationHealthy` condition and resets the history when the NodePool or
its NodeClass changes. Held in memory, as Karpenter's: after a restart the condition already on
the NodePool stands until new outcomes arrive.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final

__all__ = [
    "BUFFER_SIZE",
    "UNHEALTHY_FRACTION",
    "HealthStatus",
    "NodePoolHealth",
    "Outcome",
]

BUFFER_SIZE: Final = 4
UNHEALTHY_FRACTION: Final = 0.5
REASON_REGISTRATION_FAILED: Final = "RegistrationFailed"
MESSAGE_REGISTRATION_FAILED: Final = "Failed to register node"


class HealthStatus(Enum):
    UNKNOWN = "Unknown"
    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One launch/registration outcome; a failure carries the reason shown on the NodePool."""

    success: bool
    reason: str = ""
    message: str = ""


class NodePoolHealth:
    """Per-NodePool ring buffers of outcomes, with listeners told which NodePool changed."""

    def __init__(self, *, size: int = BUFFER_SIZE) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1 (got {size})")
        self.size = size
        self._outcomes: dict[str, deque[Outcome]] = {}
        self._listeners: list[Callable[[str], None]] = []

    def subscribe(self, listener: Callable[[str], None]) -> None:
        """Call `listener(nodepool)` after each recorded outcome (it must not block)."""
        self._listeners.append(listener)

    def record_success(self, nodepool: str) -> None:
        """A NodeClaim of `nodepool` registered."""
        self._record(nodepool, Outcome(success=True))

    def record_failure(
        self,
        nodepool: str,
        *,
        reason: str = REASON_REGISTRATION_FAILED,
        message: str = MESSAGE_REGISTRATION_FAILED,
    ) -> None:
        """A NodeClaim of `nodepool` failed to launch (pass its `Launched` reason and message)
        or to register in time (the defaults)."""
        self._record(nodepool, Outcome(success=False, reason=reason, message=message))

    def _record(self, nodepool: str, outcome: Outcome) -> None:
        buffer = self._outcomes.get(nodepool)
        if buffer is None:
            buffer = self._outcomes[nodepool] = deque(maxlen=self.size)
        buffer.append(outcome)
        for listener in self._listeners:
            listener(nodepool)

    def reset(self, nodepool: str) -> None:
        """Forget `nodepool`'s history (its spec or its NodeClass changed, or it is gone)."""
        self._outcomes.pop(nodepool, None)

    def status(self, nodepool: str) -> HealthStatus:
        buffer = self._outcomes.get(nodepool)
        if not buffer:
            return HealthStatus.UNKNOWN
        failures = sum(1 for o in buffer if not o.success)
        if failures / self.size >= UNHEALTHY_FRACTION:
            return HealthStatus.UNHEALTHY
        return HealthStatus.HEALTHY

    def last_failure(self, nodepool: str) -> Outcome | None:
        """The most recent failure in `nodepool`'s history, if any."""
        for outcome in reversed(self._outcomes.get(nodepool) or ()):
            if not outcome.success:
                return outcome
        return None
