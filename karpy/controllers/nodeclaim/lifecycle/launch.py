"""Launch: ask the cloud provider for an instance, exactly once per NodeClaim.

Idempotent across crashes twice over: the provider derives an idempotency key from the
NodeClaim (kwok names the Node after it; AWS passes a ClientToken), and within a process the
result is cached by NodeClaim UID for an hour, so a status write that fails (a conflict, a lost
connection) never leads to a second provider call.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.types import CloudProvider
from karpy.kube.clock import Clock

__all__ = ["LaunchCache", "Launcher"]

CACHE_TTL = 3600.0


@dataclass(slots=True)
class _Entry:
    claim: NodeClaim
    at: float


class LaunchCache:
    """Launch results by NodeClaim UID, kept for an hour."""

    def __init__(self, *, clock: Clock, ttl: float = CACHE_TTL) -> None:
        self.clock = clock
        self.ttl = ttl
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def get(self, uid: str) -> NodeClaim | None:
        self._expire()
        entry = self._entries.get(uid)
        return entry.claim if entry is not None else None

    def put(self, uid: str, claim: NodeClaim) -> None:
        self._entries[uid] = _Entry(claim=claim, at=self.clock.now())
        self._entries.move_to_end(uid)

    def _expire(self) -> None:
        now = self.clock.now()
        while self._entries:
            uid, entry = next(iter(self._entries.items()))
            if now - entry.at < self.ttl:
                return
            del self._entries[uid]


class Launcher:
    """`create` through the cache."""

    def __init__(self, *, provider: CloudProvider, clock: Clock) -> None:
        self.provider = provider
        self.cache = LaunchCache(clock=clock)

    async def launch(self, claim: NodeClaim) -> tuple[NodeClaim, bool]:
        """The launched NodeClaim, and whether the provider was called just now."""
        uid = claim.metadata.uid or ""
        cached = self.cache.get(uid) if uid else None
        if cached is not None:
            return cached, False
        created = await self.provider.create(claim)
        if uid:
            self.cache.put(uid, created)
        return created, True
