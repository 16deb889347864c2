"""CreateFleet requests merged (Karpenter's CreateFleet batcher).

A scale-up launches many NodeClaims with the same request: same launch templates, overrides,
capacity type and tags (the NodeClaim's own `Name` and `karpenter.sh/nodeclaim` tags are set
after launch, as Karpenter's tagging does). Requests equal but for their `ClientToken` that
arrive while a batch is open become one call for `TotalTargetCapacity` = their number. A batch
closes `IDLE` seconds after its latest request, `MAX_WAIT` after its first, or at `MAX_ITEMS`.

The answer is shared out in the order the requests came: each gets one instance of the answer
and the fleet's `Errors`; when EC2 launched fewer instances than asked (an `instant` fleet's
partial answer), the rest get no instance and those errors (or "too few instances returned"
when EC2 gave none), so each caller raises for itself. A failed call fails every request.

Idempotency: the batch's `ClientToken` is derived from its members' tokens, so a retry of the
same call by botocore returns the same instances; a member retried later is resolved by its
caller by looking (the instance it was given, or its tags), never by this batcher.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from karpy.cloudprovider.aws.batchmetrics import CREATE_FLEET, observe_batch

__all__ = [
    "IDLE",
    "MAX_ITEMS",
    "MAX_WAIT",
    "TOO_FEW",
    "FleetBatcher",
    "batch_token",
    "request_key",
    "share_out",
]

IDLE: Final = 0.035
"""Seconds a batch stays open after its latest request (Karpenter: 35 ms)."""
MAX_WAIT: Final = 1.0
"""Seconds a batch stays open at most after its first request (Karpenter: 1 s)."""
MAX_ITEMS: Final = 1_000
"""Requests per batch (Karpenter: 1,000)."""
TOO_FEW: Final = "too few instances returned"

CreateFleet = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]]
"""Sends one CreateFleet request and returns its answer."""


def request_key(request: Mapping[str, Any]) -> str:
    """Equal for requests that differ only in `ClientToken`."""
    rest = {k: v for k, v in request.items() if k != "ClientToken"}
    canonical = json.dumps(rest, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def batch_token(tokens: list[str]) -> str:
    """The batch's `ClientToken` (≤64 ASCII characters): a single request keeps its own, a
    batch gets one made of its members' (the same members always give the same token)."""
    if len(tokens) == 1:
        return tokens[0]
    digest = hashlib.sha256("\n".join(sorted(tokens)).encode()).hexdigest()
    return f"karpy-batch-{digest[:48]}"


def share_out(answer: Mapping[str, Any], count: int) -> list[dict[str, Any]]:
    """`count` single-instance answers cut from one batched answer, in request order."""
    errors = list(answer.get("Errors") or ())
    shares: list[dict[str, Any]] = []
    for entry in answer.get("Instances") or ():
        for instance_id in entry.get("InstanceIds") or ():
            if len(shares) == count:
                break  # more than asked: EC2 does not, so nobody's to claim
            single = {k: v for k, v in entry.items() if k != "InstanceIds"}
            single["InstanceIds"] = [instance_id]
            shares.append(
                {"FleetId": answer.get("FleetId"), "Instances": [single], "Errors": errors}
            )
    if len(shares) < count:
        missing = errors or [{"ErrorCode": TOO_FEW, "ErrorMessage": TOO_FEW}]
        shares.extend(
            {"FleetId": answer.get("FleetId"), "Instances": [], "Errors": missing}
            for _ in range(count - len(shares))
        )
    return shares


@dataclass
class _Batch:
    request: dict[str, Any]
    opened: float
    tokens: list[str] = field(default_factory=list)
    waiters: list[asyncio.Future[dict[str, Any]]] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


class FleetBatcher:
    """`create(request)` answers a one-instance CreateFleet request from a shared call."""

    def __init__(
        self,
        create_fleet: CreateFleet,
        *,
        idle: float = IDLE,
        max_wait: float = MAX_WAIT,
        max_items: int = MAX_ITEMS,
    ) -> None:
        self._create_fleet = create_fleet
        self._idle = idle
        self._max_wait = max_wait
        self._max_items = max_items
        self._open: dict[str, _Batch] = {}
        self._calls: set[asyncio.Future[None]] = set()

    async def create(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The answer for this request alone: at most one instance and the fleet's errors."""
        capacity = (request.get("TargetCapacitySpecification") or {}).get("TotalTargetCapacity")
        if capacity != 1:
            raise ValueError(
                "TargetCapacitySpecification.TotalTargetCapacity must be 1 for a batched "
                f"CreateFleet, not {capacity!r}"
            )
        loop = asyncio.get_running_loop()
        key = request_key(request)
        batch = self._open.get(key)
        if batch is None:
            batch = _Batch(copy.deepcopy(dict(request)), loop.time())
            self._open[key] = batch
        waiter: asyncio.Future[dict[str, Any]] = loop.create_future()
        batch.tokens.append(str(request.get("ClientToken") or ""))
        batch.waiters.append(waiter)
        if batch.timer is not None:
            batch.timer.cancel()
        if len(batch.waiters) >= self._max_items:
            self._send(key, batch)
        else:
            at = min(loop.time() + self._idle, batch.opened + self._max_wait)
            batch.timer = loop.call_at(at, self._send, key, batch)
        return await waiter

    def _send(self, key: str, batch: _Batch) -> None:
        if self._open.get(key) is batch:
            del self._open[key]
        if batch.timer is not None:
            batch.timer.cancel()
            batch.timer = None
        seconds = asyncio.get_running_loop().time() - batch.opened
        observe_batch(CREATE_FLEET, seconds=seconds, size=len(batch.waiters))
        call = asyncio.ensure_future(self._call(batch))
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)

    async def _call(self, batch: _Batch) -> None:
        request = batch.request
        request["TargetCapacitySpecification"]["TotalTargetCapacity"] = len(batch.waiters)
        if any(batch.tokens):
            request["ClientToken"] = batch_token(batch.tokens)
        try:
            answer = await self._create_fleet(request)
        except BaseException as error:  # every request of the batch sees the failure
            for waiter in batch.waiters:
                if not waiter.done():
                    waiter.set_exception(error)
            if not isinstance(error, Exception):
                raise
            return
        for waiter, share in zip(batch.waiters, share_out(answer, len(batch.waiters)), strict=True):
            if not waiter.done():
                waiter.set_result(share)
