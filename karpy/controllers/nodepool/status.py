"""Status conditions on raw objects, with operatorpkg's conventions, and safe status patches.

Several controllers write conditions to the same object. A JSON merge patch replaces the whole
`conditions` list, so every condition write carries the `resourceVersion` it was computed from
(optimistic lock): a concurrent write makes it fail with a conflict, and the controller looks
again instead of overwriting the other's condition.

Conventions: a True condition's reason is its own type; `lastTransitionTime` moves only when the
status changes; `observedGeneration` is the object's generation the condition was computed
from; the root `Ready` condition is True when every dependent is, otherwise it carries the
status, reason and message of a False dependent (or else of an Unknown one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpy.apis.descriptors import NODEPOOLS
from karpy.apis.objects import conditions_of, format_time, get_condition
from karpy.apis.v1 import conditions as cond
from karpy.kube import Client, Clock, ConflictError, NotFoundError, Resource, Result

__all__ = [
    "ConflictError",
    "generation_of",
    "patch_status",
    "remove_condition",
    "roll_up_ready",
    "same_conditions",
    "set_condition",
    "timestamp",
    "write_conditions",
    "write_ready_dependent",
]

JSON = dict[str, Any]


def timestamp(clock: Clock) -> str:
    """The clock's wall time as an RFC 3339 timestamp (seconds), as the API stores times."""
    return format_time(clock.wall())


def generation_of(obj: Mapping[str, Any]) -> int | None:
    generation = (obj.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) else None


def set_condition(
    conditions: Iterable[JSON],
    type_: str,
    *,
    status: str,
    now: str,
    reason: str | None = None,
    message: str = "",
    observed_generation: int | None = None,
) -> list[JSON]:
    """A copy of `conditions` with `type_` set; sorted by type, as kubectl shows them."""
    if status not in (cond.STATUS_TRUE, cond.STATUS_FALSE, cond.STATUS_UNKNOWN):
        raise ValueError(f"condition {type_}: status must be True, False or Unknown, not {status}")
    if not reason:
        reason = type_ if status == cond.STATUS_TRUE else cond.REASON_AWAITING_RECONCILIATION
    items = list(conditions)
    others = [dict(c) for c in items if c.get("type") != type_]
    previous = next((c for c in items if c.get("type") == type_), None)
    transition = now
    if previous is not None and previous.get("status") == status:
        transition = str(previous.get("lastTransitionTime") or now)
    new: JSON = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    return sorted([*others, new], key=_by_type)


def remove_condition(conditions: Iterable[JSON], type_: str) -> list[JSON]:
    return [dict(c) for c in conditions if c.get("type") != type_]


def roll_up_ready(
    conditions: Iterable[JSON],
    dependents: Sequence[str],
    *,
    now: str,
    observed_generation: int | None = None,
) -> list[JSON]:
    """Set any missing dependent to Unknown, then derive `Ready` from the dependents."""
    out = [dict(c) for c in conditions]
    for type_ in dependents:
        if get_condition(out, type_) is None:
            out = set_condition(
                out,
                type_,
                status=cond.STATUS_UNKNOWN,
                now=now,
                message=cond.MESSAGE_AWAITING_RECONCILIATION,
                observed_generation=observed_generation,
            )
    states = [c for c in out if c.get("type") in dependents]
    # The most recent transition explains the root best, as operatorpkg picks it.
    states.sort(key=lambda c: str(c.get("lastTransitionTime", "")), reverse=True)
    culprit = next((c for c in states if c.get("status") == cond.STATUS_FALSE), None) or next(
        (c for c in states if c.get("status") == cond.STATUS_UNKNOWN), None
    )
    if culprit is None:
        return set_condition(
            out,
            cond.CONDITION_READY,
            status=cond.STATUS_TRUE,
            now=now,
            observed_generation=observed_generation,
        )
    return set_condition(
        out,
        cond.CONDITION_READY,
        status=str(culprit["status"]),
        now=now,
        reason=str(culprit.get("reason") or cond.REASON_UNHEALTHY_DEPENDENTS),
        message=str(culprit.get("message") or ""),
        observed_generation=observed_generation,
    )


def same_conditions(a: Sequence[JSON], b: Sequence[JSON]) -> bool:
    """Equal ignoring order."""
    return sorted(a, key=_by_type) == sorted(b, key=_by_type)


def _by_type(condition: JSON) -> str:
    return str(condition.get("type"))


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
    conditions: list[JSON],
    extra: JSON | None = None,
) -> Result | None:
    """Patch `conditions` (and `extra` status fields) if they differ from `obj`'s; a conflict
    asks for a backed-off look again, as Karpenter's controllers do."""
    current = obj.get("status") or {}
    changed = not same_conditions(conditions_of(obj), conditions) or any(
        current.get(k) != v for k, v in (extra or {}).items()
    )
    if not changed:
        return None
    try:
        await patch_status(
            client, resource=resource, obj=obj, status={**(extra or {}), "conditions": conditions}
        )
    except ConflictError:
        return Result(requeue=True)
    return None


async def write_ready_dependent(
    client: Client,
    pool: Mapping[str, Any],
    *,
    type_: str,
    status: str,
    now: str,
    reason: str | None = None,
    message: str = "",
) -> Result | None:
    """Set `type_`, one of the conditions a NodePool's `Ready` derives from, derive `Ready`
    again, and write them if they changed (see `write_conditions`)."""
    generation = generation_of(pool)
    conditions = set_condition(
        conditions_of(pool),
        type_,
        status=status,
        now=now,
        reason=reason,
        message=message,
        observed_generation=generation,
    )
    conditions = roll_up_ready(
        conditions, cond.NODEPOOL_READY_DEPENDENTS, now=now, observed_generation=generation
    )
    return await write_conditions(client, resource=NODEPOOLS, obj=pool, conditions=conditions)
