"""A transport wrapper that injects faults at the HTTP seam, for tests and chaos drills.

Real apiservers cannot be asked to drop one response or throttle one verb; this wrapper can,
without touching the client's internals. Rules match requests (method, path substring, or any
predicate) and then answer with a status, fail to connect, forward the request and then lose the
answer (the server did act: the "outcome unknown" case), or delay. `partition()` fails every
request until `heal()`, and breaks open watch streams as a network cut would. Every request seen
is recorded in `requests`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from enum import Enum

from karpy.kube.errors import KubeConnectionError, KubeTimeoutError
from karpy.kube.transport import Request, Response, StreamResponse, Transport

__all__ = ["FaultInjectingTransport", "FaultKind", "Rule"]


class FaultKind(Enum):
    STATUS = "status"  # answer with `status` without forwarding
    REFUSE = "refuse"  # fail before sending (connection refused)
    LOSE_RESPONSE = "lose-response"  # forward, then fail as if the connection broke
    TIMEOUT = "timeout"  # forward, then time out
    DELAY = "delay"  # wait `delay` seconds, then forward


@dataclass(slots=True)
class Rule:
    """One fault; `times=None` fires forever, else that many times."""

    kind: FaultKind
    matches: Callable[[Request], bool]
    times: int | None = 1
    status: int = 500
    body: object = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    fired: int = 0

    def take(self, request: Request) -> bool:
        if self.times is not None and self.fired >= self.times:
            return False
        if not self.matches(request):
            return False
        self.fired += 1
        return True


def _status_body(status: int, body: object) -> bytes:
    if body is None:
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": status,
            "reason": "InjectedFault",
            "message": f"injected {status}",
        }
    return body if isinstance(body, bytes) else json.dumps(body).encode()


@dataclass(slots=True)
class _FakeStream:
    status: int
    headers: Mapping[str, str]
    body: bytes

    async def read(self) -> bytes:
        return self.body

    async def lines(self) -> AsyncIterator[bytes]:
        for line in self.body.splitlines():
            if line:
                yield line


class _CuttableStream:
    """Passes a real stream through until the transport is partitioned."""

    def __init__(self, inner: StreamResponse, cut: asyncio.Event, what: str) -> None:
        self._inner = inner
        self._cut = cut
        self._what = what

    @property
    def status(self) -> int:
        return self._inner.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._inner.headers

    async def read(self) -> bytes:
        return await self._inner.read()

    async def lines(self) -> AsyncIterator[bytes]:
        source = self._inner.lines().__aiter__()
        cut = asyncio.ensure_future(self._cut.wait())
        try:
            while True:
                following = asyncio.ensure_future(anext(source))
                await asyncio.wait({following, cut}, return_when=asyncio.FIRST_COMPLETED)
                if cut.done():
                    following.cancel()
                    raise KubeConnectionError(
                        f"{self._what}: injected partition", request_sent=True
                    )
                try:
                    line = following.result()
                except StopAsyncIteration:
                    return
                yield line
        finally:
            cut.cancel()


class FaultInjectingTransport:
    """Wraps a real `Transport`; unmatched requests pass straight through."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.rules: list[Rule] = []
        self.requests: list[Request] = []
        self._partitioned = False
        self._cut = asyncio.Event()

    def inject(
        self,
        kind: FaultKind,
        *,
        method: str | None = None,
        path_contains: str | None = None,
        match: Callable[[Request], bool] | None = None,
        times: int | None = 1,
        status: int = 500,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> Rule:
        """Add a rule; it applies to requests matching every given criterion."""

        def matches(request: Request) -> bool:
            if method is not None and request.method != method:
                return False
            if path_contains is not None and path_contains not in request.path:
                return False
            return match is None or match(request)

        rule = Rule(
            kind=kind,
            matches=matches,
            times=times,
            status=status,
            body=body,
            headers=dict(headers or {}),
            delay=delay,
        )
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()

    def partition(self) -> None:
        """Break open watch streams and fail every request as unreachable until `heal()`."""
        self._partitioned = True
        self._cut.set()

    def heal(self) -> None:
        self._partitioned = False
        self._cut = asyncio.Event()

    def _rule_for(self, request: Request) -> Rule | None:
        return next((rule for rule in self.rules if rule.take(request)), None)

    async def request(self, request: Request) -> Response:
        self.requests.append(request)
        what = f"{request.method} {request.path}"
        if self._partitioned:
            raise KubeConnectionError(f"{what}: injected partition", request_sent=False)
        rule = self._rule_for(request)
        if rule is None:
            return await self.inner.request(request)
        if rule.kind is FaultKind.STATUS:
            return Response(
                status=rule.status, headers=rule.headers, body=_status_body(rule.status, rule.body)
            )
        if rule.kind is FaultKind.REFUSE:
            raise KubeConnectionError(f"{what}: injected connection refused", request_sent=False)
        if rule.kind is FaultKind.DELAY:
            await asyncio.sleep(rule.delay)
            return await self.inner.request(request)
        await self.inner.request(request)
        if rule.kind is FaultKind.TIMEOUT:
            raise KubeTimeoutError(f"{what}: injected timeout", request_sent=True)
        raise KubeConnectionError(f"{what}: injected lost response", request_sent=True)

    def stream(self, request: Request) -> AbstractAsyncContextManager[StreamResponse]:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        self.requests.append(request)
        what = f"{request.method} {request.path}"
        if self._partitioned:
            raise KubeConnectionError(f"{what}: injected partition", request_sent=False)
        rule = self._rule_for(request)
        if rule is not None and rule.kind is FaultKind.STATUS:
            yield _FakeStream(rule.status, rule.headers, _status_body(rule.status, rule.body))
            return
        if rule is not None and rule.kind is FaultKind.REFUSE:
            raise KubeConnectionError(f"{what}: injected connection refused", request_sent=False)
        if rule is not None and rule.kind is FaultKind.DELAY:
            await asyncio.sleep(rule.delay)
        async with self.inner.stream(request) as stream:
            yield _CuttableStream(stream, self._cut, what)

    async def close(self) -> None:
        await self.inner.close()
