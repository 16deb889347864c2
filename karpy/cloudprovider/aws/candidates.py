"""The instance types a NodeClaim may launch, computed once per (catalogue, requirements,
requests) and off the event loop.

Filtering the ~1,400 types of the catalogue by a claim's requirements and requests takes tens of
milliseconds of CPU; a burst of replacements after spot interruptions launches a hundred claims
with the same few shapes at once, so the answer is shared (concurrent launches of one shape
await the same computation) and computed in a worker thread on an immutable snapshot, while the
loop keeps serving watches, leases and the other launches.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from karpy.cloudprovider.aws.fleet import Candidates, candidates
from karpy.kube.offload import run_off_loop
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirements

__all__ = ["MAX_ENTRIES", "CandidateCache"]

MAX_ENTRIES: Final = 128

Compute = Callable[[Sequence[InstanceType], Requirements, Mapping[str, int]], Candidates]
_Key = tuple[int, Requirements, frozenset[tuple[str, int]]]


class CandidateCache:
    """`Candidates` by (types list, requirements, requests); a new types list (the ICE cache or
    the catalogue changed) is a new key, and the oldest entries are dropped past `MAX_ENTRIES`."""

    def __init__(self, compute: Compute = candidates, *, max_entries: int = MAX_ENTRIES) -> None:
        self._compute = compute
        self._max = max_entries
        self._entries: OrderedDict[
            _Key, tuple[Sequence[InstanceType], asyncio.Future[Candidates]]
        ] = OrderedDict()

    async def get(
        self, types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
    ) -> Candidates:
        key: _Key = (id(types), reqs, frozenset(requests.items()))
        entry = self._entries.get(key)
        # The entry keeps its list alive, so a matching id is the same list.
        if entry is None or entry[0] is not types or _failed(entry[1]):
            snapshot = tuple(types)
            future = asyncio.ensure_future(
                run_off_loop(self._compute, snapshot, reqs, dict(requests))
            )
            entry = (types, future)
            self._entries[key] = entry
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        # One launch giving up must not cancel the computation the others wait for.
        return await asyncio.shield(entry[1])


def _failed(future: asyncio.Future[Candidates]) -> bool:
    return future.done() and (future.cancelled() or future.exception() is not None)
