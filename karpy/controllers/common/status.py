"""Writing status safely: merge patches with an optimistic lock, and condition writes.

Several controllers write conditions to the same object. A JSON merge patch replaces the whole
`conditions` list, so every condition write carries the `resourceVersion` it was computed from
(optimistic lock): a concurrent write makes it fail with a conflict, and the controller looks
again instead of overwriting the other's condition. The rules for the conditions themselves
(reasons, transition times, the root `Ready`) are `karpy.apis.conditions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from karpy.apis.conditions import Conditions
from karpy.apis.objects import format_time
from karpy.kube import Client, Clock, ConflictError, NotFoundError, Resource, Result

__all__ = [
    "ConflictError",
    "generation_of",
    "patch_status",
    "timestamp",
    "write_condition",
    "write_conditions",
]

JSON = dict[str, Any]


def timestamp(clock: Clock) -> str:
    """The clock's wall time as an RFC 3339 timestamp (seconds), as the API stores times."""
    return format_time(clock.wall())


def generation_of(obj: Mapping[str, Any]) -> int | None:
    generation = (obj.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) else None


async def patch_status(
    client: Client,
    *,
    resource: Resource,
    obj: Mapping[str, Any],
    status: JSON,
    optimistic_lock: bool = True,
) -> JSON | None:
    """Merge-patch `status` into `obj`'s status subresource.

    With `optimistic_lock`, the patch carries `obj`'s resourceVersion and raises
    `ConflictError` if the object changed meanwhile. Returns the patched object, or None when
    the object is gone.
    """
    meta = obj.get("metadata") or {}
    patch: JSON = {"status": status}
    if optimistic_lock:
        patch["metadata"] = {"resourceVersion": meta.get("resourceVersion")}
    try:
        return await client.patch_status(
            resource,
            str(meta.get("name", "")),
            patch,
            namespace=meta.get("namespace") if resource.namespaced else None,
        )
    except NotFoundError:
        return None


async def write_conditions(
    client: Client,
    *,
    resource: Resource,
    obj: Mapping[str, Any],
    conditions: Conditions,
    extra: JSON | None = None,
) -> Result | None:
    """Patch `conditions` (and `extra` status fields) if they differ from `obj`'s; a conflict
    asks for a backed-off look again, as Karpenter's controllers do."""
    current = obj.get("status") or {}
    changed = conditions.differs_from(obj) or any(
        current.get(k) != v for k, v in (extra or {}).items()
    )
    if not changed:
        return None
    try:
        await patch_status(
            client,
            resource=resource,
            obj=obj,
            status={**(extra or {}), "conditions": conditions.items},
        )
    except ConflictError:
        return Result(requeue=True)
    return None


async def write_condition(
    client: Client,
    resource: Resource,
    obj: Mapping[str, Any],
    *,
    type_: str,
    status: str,
    reason: str | None = None,
    message: str = "",
    now: datetime,
) -> JSON | None:
    """Set one condition on `obj` and write the list with `obj`'s resourceVersion: the patched
    object, or None when the condition already read so. `ConflictError` when `obj` changed
    meanwhile (re-read and try again); `NotFoundError` when it is gone."""
    conditions = Conditions.of(obj, now=now)
    if not conditions.set(type_, status, reason=reason, message=message):
        return None
    meta = obj.get("metadata") or {}
    patch = {
        "metadata": {"resourceVersion": meta.get("resourceVersion")},
        "status": {"conditions": conditions.items},
    }
    return await client.patch_status(
        resource,
        str(meta.get("name", "")),
        patch,
        namespace=meta.get("namespace") if resource.namespaced else None,
    )
