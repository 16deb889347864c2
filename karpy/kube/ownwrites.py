"""The newest resourceVersion this client wrote per object, so a write it knows must fail is not
sent.

Controllers write on what their informer shows and carry its resourceVersion as a precondition
(optimistic lock). Right after a controller's own write, the informer may still show the older
object: on a busy API server the watch lags seconds behind, while the controller requeues after
one. Each write on that stale view is refused with 409 Conflict, retried with backoff, refused
again, and so on until the watch catches up; a hundred NodeClaims draining at once sent over a
thousand such status patches (each decoded, checked and answered by the API server, on the
cores karpy and the nodes share). A precondition older than a resourceVersion this client
itself received for the same object cannot hold, so the client raises the same `ConflictError`
without sending it: callers behave exactly as on the server's answer, minus the round trip.

resourceVersions are opaque by contract but etcd revisions in practice (what the API server
has always used); a value that is not an integer is never compared.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REMEMBERED", "OwnWrites"]

REMEMBERED: Final = 20_000
"""Objects remembered (least recently written forgotten first)."""


def _revision(value: object) -> int | None:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


class OwnWrites:
    """resourceVersions received for writes, by object path (without subresource)."""

    def __init__(self, *, size: int = REMEMBERED) -> None:
        self._size = size
        self._written: OrderedDict[str, int] = OrderedDict()

    def record(self, path: str, result: object) -> None:
        """Remember the resourceVersion of a written object (the server's answer)."""
        if not isinstance(result, Mapping):
            return
        revision = _revision((result.get("metadata") or {}).get("resourceVersion"))
        if revision is None:
            return
        if revision > self._written.get(path, -1):
            self._written[path] = revision
        self._written.move_to_end(path)
        while len(self._written) > self._size:
            self._written.popitem(last=False)

    def stale(self, path: str, body: Any) -> int | None:
        """The newer revision this client wrote, if `body`'s resourceVersion precondition is
        older than it (the write would be refused); else None."""
        if not isinstance(body, Mapping):
            return None
        precondition = _revision((body.get("metadata") or {}).get("resourceVersion"))
        written = self._written.get(path)
        if precondition is None or written is None or precondition >= written:
            return None
        return written

    def forget(self, path: str) -> None:
        self._written.pop(path, None)
