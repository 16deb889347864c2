"""Every exception the Kubernetes client raises, in one place.

```
KubeError
├── ConfigError               no usable kubeconfig / in-cluster configuration
├── ApiError                  the apiserver answered with a failure Status
│   ├── BadRequestError       400
│   ├── UnauthorizedError     401
│   ├── ForbiddenError        403
│   ├── NotFoundError         404
│   ├── MethodNotAllowedError 405
│   ├── ConflictError         409 (optimistic-concurrency conflict)
│   ├── AlreadyExistsError    409 reason AlreadyExists
│   ├── GoneError             410 (resourceVersion too old: relist)
│   ├── InvalidError          422, with the field causes
│   ├── TooManyRequestsError  429, with Retry-After
│   └── ServerError           5xx, with Retry-After when the server sent one
├── TransportError            no (complete) answer
│   ├── KubeConnectionError   could not connect, or the connection broke
│   └── KubeTimeoutError      the call's timeout passed
└── OutcomeUnknownError       a non-idempotent call may or may not have taken effect
```

`TransportError.request_sent` says whether the request may have reached the server; only when it
is False (or the server answered 429) may a create be sent again. `OutcomeUnknownError` tells the
caller to find out by reading, never by creating again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "BadRequestError",
    "Cause",
    "ConfigError",
    "ConflictError",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "KubeConnectionError",
    "KubeError",
    "KubeTimeoutError",
    "MethodNotAllowedError",
    "NotFoundError",
    "OutcomeUnknownError",
    "ServerError",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "api_error_from_response",
]


class KubeError(Exception):
    """Base of every error raised by `karpy.kube`."""


class ConfigError(KubeError):
    """No usable connection configuration (kubeconfig or in-cluster)."""


@dataclass(frozen=True, slots=True)
class Cause:
    """One field-level reason from a Status's `details.causes`."""

    reason: str
    message: str
    field: str


class ApiError(KubeError):
    """The apiserver answered with a failure `Status`."""

    def __init__(
        self,
        *,
        status: int,
        reason: str = "",
        message: str = "",
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = details or {}
        self.retry_after = retry_after
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")

    @property
    def causes(self) -> list[Cause]:
        return [
            Cause(
                reason=str(c.get("reason", "")),
                message=str(c.get("message", "")),
                field=str(c.get("field", "")),
            )
            for c in self.details.get("causes") or []
            if isinstance(c, dict)
        ]


class BadRequestError(ApiError):
    """400: the request was malformed."""


class UnauthorizedError(ApiError):
    """401: the credentials were not accepted."""


class ForbiddenError(ApiError):
    """403: RBAC denied the request."""


class NotFoundError(ApiError):
    """404: the object (or resource type) does not exist."""


class MethodNotAllowedError(ApiError):
    """405: the resource does not support this verb."""


class ConflictError(ApiError):
    """409: the object changed since it was read (stale resourceVersion or precondition)."""


class AlreadyExistsError(ApiError):
    """409 AlreadyExists: an object with that name exists."""


class GoneError(ApiError):
    """410: the requested resourceVersion is no longer available; list again."""


class InvalidError(ApiError):
    """422: the object failed validation; `causes` names the fields."""

    def __str__(self) -> str:
        base = super().__str__()
        missing = [c for c in self.causes if c.field and c.field not in base]
        fields = "; ".join(f"{c.field}: {c.message}" for c in missing)
        return f"{base} ({fields})" if fields else base


class TooManyRequestsError(ApiError):
    """429: throttled by the apiserver (or a PodDisruptionBudget, for evictions)."""


class ServerError(ApiError):
    """5xx: the apiserver failed; may be retried if the call is idempotent."""


class TransportError(KubeError):
    """No complete answer from the apiserver."""

    def __init__(self, message: str, *, request_sent: bool) -> None:
        super().__init__(message)
        self.request_sent = request_sent


class KubeConnectionError(TransportError):
    """Could not connect, or the connection broke before a full answer."""


class KubeTimeoutError(TransportError):
    """The call's timeout passed before a full answer."""


class OutcomeUnknownError(KubeError):
    """A call that must not be repeated failed after it may have reached the server.

    Find out whether it took effect by reading (for a create: get by name, or list by a label
    the object carries), never by sending it again.
    """

    def __init__(self, message: str, *, cause: KubeError) -> None:
        super().__init__(f"{message}: {cause}")
        self.cause = cause


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def _retry_after(header: str | None, details: dict[str, Any]) -> float | None:
    if header:
        try:
            return max(0.0, float(header))
        except ValueError:
            pass  # an HTTP date; fall back to the Status details
    seconds = details.get("retryAfterSeconds")
    if isinstance(seconds, int | float) and seconds >= 0:
        return float(seconds)
    return None


def api_error_from_response(
    status: int, body: object, *, retry_after_header: str | None = None
) -> ApiError:
    """Build the precise `ApiError` for an HTTP failure, from a decoded Status body if any."""
    reason = ""
    message = ""
    details: dict[str, Any] = {}
    if isinstance(body, dict):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
        raw_details = body.get("details")
        if isinstance(raw_details, dict):
            details = raw_details
        code = body.get("code")
        if isinstance(code, int) and code >= 400 and body.get("kind") == "Status":
            status = code
    elif isinstance(body, str | bytes):
        message = body.decode(errors="replace") if isinstance(body, bytes) else body
        message = message.strip()[:500]
    retry = _retry_after(retry_after_header, details)
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExistsError
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif status >= 500:
        cls = ServerError
    else:
        cls = ApiError
    return cls(status=status, reason=reason, message=message, details=details, retry_after=retry)
