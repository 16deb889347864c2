"""The HTTP seam between the client and the apiserver.

`Client` speaks only to a `Transport`: `request()` for ordinary calls and `stream()` for
watches. `AiohttpTransport` is the real one; tests and fault injection wrap it (see
`karpy.kube.faults`) rather than patching anything inside. A transport raises only
`KubeConnectionError` or `KubeTimeoutError`, each saying whether the request may have reached
the server, so the client can decide what is safe to send again.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from multidict import CIMultiDict

from karpy.kube.errors import KubeConnectionError, KubeTimeoutError, TransportError

__all__ = [
    "AiohttpTransport",
    "Request",
    "Response",
    "StreamResponse",
    "Transport",
]


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request; `timeout` bounds a whole call, `read_timeout` a stream's silence."""

    method: str
    path: str
    params: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    content_type: str | None = None
    timeout: float = 30.0
    read_timeout: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes


class StreamResponse(Protocol):
    """An open streaming response; `lines()` yields newline-delimited chunks without the `\\n`."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def read(self) -> bytes: ...

    def lines(self) -> AsyncIterator[bytes]: ...


class Transport(Protocol):
    """What `Client` needs from HTTP; wrap one to inject faults."""

    async def request(self, request: Request) -> Response: ...

    def stream(self, request: Request) -> AbstractAsyncContextManager[StreamResponse]: ...

    async def close(self) -> None: ...


HeaderProvider = Callable[[], Awaitable[Sequence[tuple[str, str]]]]
"""Returns (name, value) pairs; a name may repeat (e.g. `Impersonate-Group`)."""


async def _no_headers() -> Sequence[tuple[str, str]]:
    return ()


def _translate(exc: BaseException, what: str) -> TransportError:
    """Map aiohttp/asyncio failures to our two transport errors."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return KubeTimeoutError(f"{what}: connect timed out", request_sent=False)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return KubeConnectionError(f"{what}: cannot connect: {exc}", request_sent=False)
    if isinstance(exc, asyncio.TimeoutError):
        return KubeTimeoutError(f"{what}: timed out", request_sent=True)
    return KubeConnectionError(f"{what}: {type(exc).__name__}: {exc}", request_sent=True)


class _AiohttpStream:
    def __init__(self, response: aiohttp.ClientResponse, what: str) -> None:
        self._response = response
        self._what = what

    @property
    def status(self) -> int:
        return self._response.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _translate(exc, self._what) from exc

    async def lines(self) -> AsyncIterator[bytes]:
        buffer = b""
        content = self._response.content
        try:
            while True:
                chunk = await content.readany()
                if not chunk:
                    break
                buffer += chunk
                if b"\n" not in chunk:
                    continue
                *complete, buffer = buffer.split(b"\n")
                for line in complete:
                    if line:
                        yield line
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _translate(exc, self._what) from exc
        if buffer.strip():
            yield buffer


class AiohttpTransport:
    """HTTP/1.1 over one pooled aiohttp session, created lazily on the running loop."""

    def __init__(
        self,
        *,
        base_url: str,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        headers: HeaderProvider = _no_headers,
        connection_limit: int = 200,
        user_agent: str = "karpy",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._server_hostname = server_hostname
        self._headers = headers
        self._limit = connection_limit
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._limit, ssl=self._ssl, enable_cleanup_closed=True
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": self._user_agent, "Accept": "application/json"},
                auto_decompress=True,
                skip_auto_headers=("Content-Type",),
            )
        return self._session

    async def _request_headers(self, request: Request) -> CIMultiDict[str]:
        headers: CIMultiDict[str] = CIMultiDict(await self._headers())
        headers.update(request.headers)
        if request.content_type is not None:
            headers["Content-Type"] = request.content_type
        return headers

    async def request(self, request: Request) -> Response:
        what = f"{request.method} {request.path}"
        session = self._get_session()
        headers = await self._request_headers(request)
        timeout = aiohttp.ClientTimeout(
            total=request.timeout, sock_connect=min(request.timeout, 10)
        )
        try:
            async with session.request(
                request.method,
                self.base_url + request.path,
                params=list(request.params),
                data=request.body,
                headers=headers,
                timeout=timeout,
                server_hostname=self._server_hostname,
                allow_redirects=False,
            ) as response:
                body = await response.read()
                return Response(status=response.status, headers=response.headers, body=body)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _translate(exc, what) from exc

    def stream(self, request: Request) -> AbstractAsyncContextManager[StreamResponse]:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        what = f"{request.method} {request.path}"
        session = self._get_session()
        headers = await self._request_headers(request)
        timeout = aiohttp.ClientTimeout(
            total=request.timeout,
            sock_connect=10,
            sock_read=request.read_timeout,
        )
        try:
            response = await session.request(
                request.method,
                self.base_url + request.path,
                params=list(request.params),
                data=request.body,
                headers=headers,
                timeout=timeout,
                server_hostname=self._server_hostname,
                allow_redirects=False,
                read_bufsize=1 << 20,
            )
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _translate(exc, what) from exc
        try:
            yield _AiohttpStream(response, what)
        finally:
            response.close()

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
