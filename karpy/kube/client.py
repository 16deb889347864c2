"""An asyncio Kubernetes client on raw dicts, with client-go's safety rules.

Objects go in and come out as the JSON dicts the apiserver speaks; nothing is deserialized into
generated models. Every call has a timeout, waits for the client-side QPS/burst bucket, and
raises a precise `karpy.kube.errors` exception.

Retries (jittered exponential backoff, honouring Retry-After) happen only where repeating the
call cannot duplicate an effect:

- reads (get, list, watch start) and deletes;
- updates carrying `metadata.resourceVersion` (a repeat after success fails with Conflict);
- patches, except JSON patches without a `test` operation (an `add` to a list would repeat);
- evictions (a pod is evicted at most once), except that their 429 (a disruption budget says
  no) is returned to the caller at once;
- creates only when the request surely never reached the server (connection refused, or 429
  which the apiserver sends before doing anything). If a create may have happened, the client
  raises `OutcomeUnknownError`: look before creating again.

An update or patch whose resourceVersion precondition is older than one this client received
for the same object is refused with `ConflictError` without being sent (`karpy.kube.ownwrites`).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any
from urllib.parse import urlsplit

from karpy.kube import jsonio, metrics
from karpy.kube.clock import Clock, RealClock
from karpy.kube.config import ConnectionConfig, load_config
from karpy.kube.errors import (
    ApiError,
    ConflictError,
    KubeError,
    OutcomeUnknownError,
    ServerError,
    TooManyRequestsError,
    TransportError,
    api_error_from_response,
)
from karpy.kube.memory import gc_paused
from karpy.kube.ownwrites import OwnWrites
from karpy.kube.ratelimit import TokenBucket
from karpy.kube.resources import PODS, Resource
from karpy.kube.transport import Request, Response, Transport

__all__ = [
    "Client",
    "ObjectList",
    "PatchType",
    "RetryPolicy",
    "Selector",
    "WatchEvent",
]

JSON = dict[str, Any]
Selector = str | Mapping[str, str] | None
Transform = Callable[[JSON], JSON]


class PatchType(StrEnum):
    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


class _Retry(Enum):
    """How a call may be repeated."""

    ALWAYS = "always"  # idempotent
    IF_UNSENT = "if-unsent"  # creates: only if the server never saw it
    NO_429 = "no-429"  # evictions: idempotent, but a 429 is an answer, not throttling


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Attempts per call and the jittered exponential backoff between them."""

    max_attempts: int = 6
    base_delay: float = 0.1
    max_delay: float = 5.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(self.max_delay, self.base_delay * 2.0**attempt)
        jittered = backoff * random.uniform(0.5, 1.5)
        if retry_after is not None:
            return max(min(retry_after, self.max_retry_after), jittered * 0.1)
        return jittered


@dataclass(frozen=True, slots=True)
class ObjectList:
    """All items of a (paginated) list and the resourceVersion to watch from."""

    items: list[JSON]
    resource_version: str


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """`type` is ADDED, MODIFIED, DELETED or BOOKMARK; `object` the raw object."""

    type: str
    object: JSON


def selector_string(selector: Selector) -> str | None:
    """`{"app": "x"}` -> `app=x`; strings pass through; empty means none."""
    if selector is None:
        return None
    if isinstance(selector, str):
        return selector or None
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or None


def _encode(body: object) -> bytes:
    return jsonio.dumps(body)


def _decode(response: Response) -> Any:
    if not response.body:
        return {}
    try:
        return jsonio.loads(response.body)
    except ValueError:
        return response.body


def _decode_page(response: Response, transform: Transform | None) -> tuple[list[JSON], JSON]:
    """A list page's items (trimmed by `transform`) and its list metadata."""
    with gc_paused():
        page = jsonio.loads(response.body)
        if not isinstance(page, dict):
            raise ValueError(f"a list response is not a JSON object: {type(page).__name__}")
        items: list[JSON] = page.get("items") or []
        meta: JSON = page.get("metadata") or {}
        del page
        if transform is not None:
            items = [transform(obj) for obj in items]
    return items, meta


_TRIMMED_EVENTS = frozenset(("ADDED", "MODIFIED", "DELETED"))


def _decode_event(line: bytes, transform: Transform | None) -> WatchEvent:
    """One watch line; the object trimmed by `transform` unless it is a bookmark or an error."""
    with gc_paused():
        event = jsonio.loads(line)
        kind = str(event.get("type"))
        obj = event.get("object") or {}
        del event
        if transform is not None and kind in _TRIMMED_EVENTS:
            obj = transform(obj)
    return WatchEvent(type=kind, object=obj)


def _params(**values: object) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for key, value in values.items():
        if value is None or value is False:
            continue
        out.append((key, "true" if value is True else str(value)))
    return tuple(out)


def _patch_retry(patch: object, patch_type: PatchType) -> _Retry | None:
    if patch_type is not PatchType.JSON:
        return _Retry.ALWAYS
    if isinstance(patch, Sequence) and any(
        isinstance(op, Mapping) and op.get("op") == "test" for op in patch
    ):
        return _Retry.ALWAYS
    return None


class Client:
    """Raw-dict Kubernetes client over a `Transport` (the seam tests wrap)."""

    def __init__(
        self,
        transport: Transport,
        *,
        qps: float = 200.0,
        burst: int = 300,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        host: str = "",
        ca_file: str | None = None,
    ) -> None:
        self.transport = transport
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.clock = clock or RealClock()
        self.limiter = TokenBucket(qps=qps, burst=burst, clock=self.clock)
        self.host = host
        self.ca_file = ca_file
        """The CA file the apiserver's certificate is checked against, if any."""
        self.own_writes = OwnWrites()

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        config: ConnectionConfig | None = None,
        qps: float = 200.0,
        burst: int = 300,
        request_timeout: float = 30.0,
        user_agent: str = "karpy",
    ) -> Client:
        """A client for the configured cluster (see `karpy.kube.config.load_config`)."""
        config = config or await load_config(kubeconfig=kubeconfig, context=context)
        return cls(
            config.transport(user_agent=user_agent),
            qps=qps,
            burst=burst,
            timeout=request_timeout,
            host=urlsplit(config.server).netloc,
            ca_file=config.ca_file,
        )

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the one request path ------------------------------------------------------------------

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: tuple[tuple[str, str], ...] = (),
        body: object = None,
        content_type: str = "application/json",
        retry: _Retry | None,
        request_timeout: float | None = None,
    ) -> Any:
        response = await self._send(
            method,
            path,
            params=params,
            body=body,
            content_type=content_type,
            retry=retry,
            request_timeout=request_timeout,
        )
        return _decode(response)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: tuple[tuple[str, str], ...] = (),
        body: object = None,
        content_type: str = "application/json",
        retry: _Retry | None,
        request_timeout: float | None = None,
    ) -> Response:
        """The request with limits, retries and typed errors; a response below 400, undecoded."""
        request = Request(
            method=method,
            path=path,
            params=params,
            body=None if body is None else _encode(body),
            content_type=None if body is None else content_type,
            timeout=request_timeout or self.timeout,
        )
        attempt = 0
        while True:
            await self.limiter.acquire()
            retry_after: float | None = None
            try:
                response = await self.transport.request(request)
            except TransportError as exc:
                metrics.REST_CLIENT_REQUESTS.labels("<error>", method, self.host).inc()
                if exc.request_sent and retry not in (_Retry.ALWAYS, _Retry.NO_429):
                    raise OutcomeUnknownError(f"{method} {path}", cause=exc) from exc
                failure: KubeError = exc
            else:
                metrics.REST_CLIENT_REQUESTS.labels(str(response.status), method, self.host).inc()
                if response.status < 400:
                    return response
                error = api_error_from_response(
                    response.status,
                    _decode(response),
                    retry_after_header=response.headers.get("Retry-After"),
                )
                if not self._retryable(error, retry):
                    if isinstance(error, ServerError) and retry not in (
                        _Retry.ALWAYS,
                        _Retry.NO_429,
                    ):
                        raise OutcomeUnknownError(f"{method} {path}", cause=error) from error
                    raise error
                failure = error
                retry_after = error.retry_after
            attempt += 1
            if attempt >= self.retry.max_attempts:
                raise failure
            await self.clock.sleep(self.retry.delay(attempt - 1, retry_after))

    @staticmethod
    def _retryable(error: ApiError, retry: _Retry | None) -> bool:
        if isinstance(error, TooManyRequestsError):
            return retry is not _Retry.NO_429
        if isinstance(error, ServerError):
            return retry in (_Retry.ALWAYS, _Retry.NO_429)
        return False

    # -- reads ------------------------------------------------------------------------------------

    async def server_version(self) -> JSON:
        """The apiserver's `/version` (`major`, `minor`, `gitVersion`)."""
        result: JSON = await self._call("GET", "/version", retry=_Retry.ALWAYS)
        return result

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JSON:
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        result: JSON = await self._call("GET", path, retry=_Retry.ALWAYS)
        return result

    async def list_pages(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        limit: int = 500,
        resource_version: str | None = None,
        transform: Transform | None = None,
    ) -> AsyncIterator[tuple[list[JSON], str]]:
        """Yield (items, resourceVersion) page by page; the last page's RV seeds a watch.

        With `transform`, each item is trimmed as soon as its page is decoded and the raw page
        is dropped before the page is yielded: raw pages are the list's memory peak. A
        `GoneError` here means a continue token expired mid-list; start over.
        """
        path = resource.path(namespace=namespace)
        token: str | None = None
        while True:
            params = _params(
                limit=limit or None,
                labelSelector=selector_string(label_selector),
                fieldSelector=selector_string(field_selector),
                resourceVersion=resource_version if token is None else None,
                **{"continue": token},
            )
            response = await self._send("GET", path, params=params, retry=_Retry.ALWAYS)
            items, meta = _decode_page(response, transform)
            del response
            yield items, str(meta.get("resourceVersion", ""))
            del items
            token = meta.get("continue") or None
            if token is None:
                return

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        limit: int = 500,
    ) -> ObjectList:
        """Every matching object, following continue tokens."""
        items: list[JSON] = []
        version = ""
        async for page, page_version in self.list_pages(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
        ):
            items.extend(page)
            version = page_version
        return ObjectList(items=items, resource_version=version)

    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        timeout_seconds: int = 300,
        inactivity_timeout: float = 90.0,
        allow_bookmarks: bool = True,
        transform: Transform | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Stream events until the server ends the watch; ERROR events raise (410: `GoneError`).

        `inactivity_timeout` bounds the silence between lines (bookmarks keep a quiet watch
        alive), so a half-open connection cannot hang the watch. `transform` trims the objects
        of ADDED, MODIFIED and DELETED events as they are decoded.
        """
        request = Request(
            method="GET",
            path=resource.path(namespace=namespace),
            params=_params(
                watch=True,
                resourceVersion=resource_version,
                allowWatchBookmarks=allow_bookmarks,
                timeoutSeconds=timeout_seconds,
                labelSelector=selector_string(label_selector),
                fieldSelector=selector_string(field_selector),
            ),
            timeout=timeout_seconds + 30.0,
            read_timeout=inactivity_timeout,
        )
        await self.limiter.acquire()
        async with self.transport.stream(request) as stream:
            metrics.REST_CLIENT_REQUESTS.labels(str(stream.status), "WATCH", self.host).inc()
            if stream.status >= 400:
                body = await stream.read()
                try:
                    decoded: object = jsonio.loads(body) if body else {}
                except ValueError:
                    decoded = body
                raise api_error_from_response(
                    stream.status, decoded, retry_after_header=stream.headers.get("Retry-After")
                )
            async for line in stream.lines():
                event = _decode_event(line, transform)
                if event.type == "ERROR":
                    obj = event.object
                    raise api_error_from_response(int(obj.get("code") or 500), obj)
                yield event

    # -- writes -----------------------------------------------------------------------------------

    async def create(
        self,
        resource: Resource,
        obj: JSON,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """POST `obj`. Never repeated once it may have reached the server: on doubt it raises
        `OutcomeUnknownError`, and the caller must look before trying again."""
        namespace = namespace or (obj.get("metadata") or {}).get("namespace")
        path = resource.path(namespace=namespace if resource.namespaced else None)
        params = _params(fieldManager=field_manager, dryRun="All" if dry_run else None)
        result: JSON = await self._call(
            "POST", path, params=params, body=obj, retry=_Retry.IF_UNSENT
        )
        created = str((result.get("metadata") or {}).get("name") or "")
        if created and not dry_run:
            target = resource.path(
                namespace=namespace if resource.namespaced else None, name=created
            )
            self.own_writes.record(target, result)
        return result

    async def update(
        self,
        resource: Resource,
        obj: JSON,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> JSON:
        """PUT `obj` (optimistic concurrency through its `metadata.resourceVersion`)."""
        meta = obj.get("metadata") or {}
        path = resource.path(
            namespace=meta.get("namespace") if resource.namespaced else None,
            name=meta.get("name", ""),
            subresource=subresource,
        )
        retry = _Retry.ALWAYS if meta.get("resourceVersion") else None
        params = _params(fieldManager=field_manager)
        target = resource.path(
            namespace=meta.get("namespace") if resource.namespaced else None,
            name=meta.get("name", ""),
        )
        self._refuse_stale("PUT", target, obj)
        result: JSON = await self._call("PUT", path, params=params, body=obj, retry=retry)
        self.own_writes.record(target, result)
        return result

    async def update_status(self, resource: Resource, obj: JSON) -> JSON:
        return await self.update(resource, obj, subresource="status")

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: object,
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> JSON:
        """PATCH with a merge, strategic, JSON or server-side-apply patch."""
        if patch_type is PatchType.APPLY and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        params = _params(
            fieldManager=field_manager, force=force if patch_type is PatchType.APPLY else None
        )
        target = resource.path(namespace=namespace, name=name)
        self._refuse_stale("PATCH", target, patch)
        result: JSON = await self._call(
            "PATCH",
            path,
            params=params,
            body=patch,
            content_type=patch_type.value,
            retry=_patch_retry(patch, patch_type),
        )
        self.own_writes.record(target, result)
        return result

    def _refuse_stale(self, method: str, target: str, body: object) -> None:
        """`ConflictError` without a request when `body`'s resourceVersion precondition is
        older than a version this client wrote: the server would refuse it the same way."""
        written = self.own_writes.stale(target, body)
        if written is not None:
            raise ConflictError(
                status=409,
                reason="Conflict",
                message=f"{method} {target}: the resourceVersion precondition is older than "
                f"{written}, which this client wrote (not sent)",
            )

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: object,
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
    ) -> JSON:
        return await self.patch(
            resource,
            name,
            patch,
            namespace=namespace,
            patch_type=patch_type,
            subresource="status",
            field_manager=field_manager,
        )

    async def apply(
        self,
        resource: Resource,
        obj: JSON,
        *,
        field_manager: str,
        force: bool = False,
        subresource: str | None = None,
    ) -> JSON:
        """Server-side apply `obj` (which names itself) as `field_manager`."""
        meta = obj.get("metadata") or {}
        return await self.patch(
            resource,
            str(meta.get("name", "")),
            obj,
            namespace=meta.get("namespace") if resource.namespaced else None,
            patch_type=PatchType.APPLY,
            subresource=subresource,
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> JSON:
        """DELETE, optionally only if the object still has this `uid` / `resource_version`."""
        path = resource.path(namespace=namespace, name=name)
        options = _delete_options(
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
        )
        result: JSON = await self._call("DELETE", path, body=options, retry=_Retry.ALWAYS)
        return result

    async def evict(
        self,
        name: str,
        *,
        namespace: str,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        """Create a policy/v1 Eviction; `TooManyRequestsError` means a PDB refuses for now."""
        body: JSON = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        options = _delete_options(
            uid=uid,
            resource_version=resource_version,
            propagation_policy=None,
            grace_period_seconds=grace_period_seconds,
        )
        if len(options) > 2:
            body["deleteOptions"] = options
        path = PODS.path(namespace=namespace, name=name, subresource="eviction")
        await self._call("POST", path, body=body, retry=_Retry.NO_429)


def _delete_options(
    *,
    uid: str | None,
    resource_version: str | None,
    propagation_policy: str | None,
    grace_period_seconds: int | None,
) -> JSON:
    options: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
    preconditions = {
        k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v is not None
    }
    if preconditions:
        options["preconditions"] = preconditions
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    return options
