"""The writes that mark a node as being disrupted, and undo them, with optimistic locking.

A command is persisted on the objects themselves, so that a new leader can finish or roll back
what the previous one started:

- each candidate's NodeClaim carries `karpy.sh/disruption-command` (the command's id),
  `karpy.sh/disruption-replacements` (how many replacements the command launches) and
  `karpy.sh/disruption-started` (when), and for `karpy explain node` the method
  (`karpy.sh/disruption-method`: `emptiness`, `drift`, `consolidation/single`, ...) and the
  hourly savings it expects (`karpy.sh/disruption-savings`, when known), besides the
  `DisruptionReason` condition, and its Node the `karpenter.sh/disrupted:NoSchedule` taint;
- each replacement NodeClaim carries `karpy.sh/disruption-replacement-for` (the command's id).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import TAINT_DISRUPTED_KEY, TAINT_EFFECT_NO_SCHEDULE
from karpy.controllers.common.status import patch_status
from karpy.kube import NODES, Client, Clock, ConflictError

__all__ = [
    "ANNOTATION_COMMAND",
    "ANNOTATION_METHOD",
    "ANNOTATION_REPLACEMENTS",
    "ANNOTATION_REPLACEMENT_FOR",
    "ANNOTATION_SAVINGS",
    "ANNOTATION_STARTED",
    "annotation",
    "has_disrupted_taint",
    "set_command_annotations",
    "set_disrupted_taint",
    "set_disruption_reason",
]

ANNOTATION_COMMAND: Final = "karpy.sh/disruption-command"
ANNOTATION_REPLACEMENTS: Final = "karpy.sh/disruption-replacements"
ANNOTATION_STARTED: Final = "karpy.sh/disruption-started"
ANNOTATION_REPLACEMENT_FOR: Final = "karpy.sh/disruption-replacement-for"
ANNOTATION_METHOD: Final = "karpy.sh/disruption-method"
ANNOTATION_SAVINGS: Final = "karpy.sh/disruption-savings"
COMMAND_ANNOTATIONS: Final = (
    ANNOTATION_COMMAND,
    ANNOTATION_REPLACEMENTS,
    ANNOTATION_STARTED,
    ANNOTATION_METHOD,
    ANNOTATION_SAVINGS,
)
PATCH_ATTEMPTS: Final = 3

JSON = dict[str, Any]


def annotation(obj: Mapping[str, Any] | None, key: str) -> str | None:
    value = (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(key)
    return None if value is None else str(value)


def has_disrupted_taint(node: Mapping[str, Any] | None) -> bool:
    return any(
        t.get("key") == TAINT_DISRUPTED_KEY
        for t in ((node or {}).get("spec") or {}).get("taints") or ()
    )


async def retry_update(
    fetch: Callable[[], Awaitable[JSON]],
    apply: Callable[[JSON], Awaitable[None]],
) -> None:
    """Read fresh and write with the read's resourceVersion; retry on conflicts."""
    for attempt in range(PATCH_ATTEMPTS):
        obj = await fetch()
        try:
            await apply(obj)
            return
        except ConflictError:
            if attempt == PATCH_ATTEMPTS - 1:
                raise


async def set_disrupted_taint(client: Client, node_name: str, *, present: bool) -> None:
    """Add or remove `karpenter.sh/disrupted:NoSchedule` on the Node."""

    async def apply(node: JSON) -> None:
        taints = list((node.get("spec") or {}).get("taints") or ())
        if has_disrupted_taint(node) == present:
            return
        if present:
            taints.append({"key": TAINT_DISRUPTED_KEY, "effect": TAINT_EFFECT_NO_SCHEDULE})
        else:
            taints = [t for t in taints if t.get("key") != TAINT_DISRUPTED_KEY]
        meta = node.get("metadata") or {}
        await client.patch(
            NODES,
            str(meta.get("name") or node_name),
            {
                "metadata": {"resourceVersion": meta.get("resourceVersion")},
                "spec": {"taints": taints or None},
            },
        )

    await retry_update(lambda: client.get(NODES, node_name), apply)


async def set_disruption_reason(
    client: Client, clock: Clock, claim_name: str, reason: str | None
) -> None:
    """Set (or, with None, remove) the NodeClaim's `DisruptionReason` condition."""

    async def apply(claim: JSON) -> None:
        conditions = Conditions.of(claim, now=clock.wall())
        if reason is None:
            conditions.remove(cond.NODECLAIM_DISRUPTION_REASON)
        else:
            conditions.set(
                cond.NODECLAIM_DISRUPTION_REASON, cond.STATUS_TRUE, reason=reason, message=reason
            )
        if not conditions.differs_from(claim):
            return
        await patch_status(
            client, resource=NODECLAIMS, obj=claim, status={"conditions": conditions.items}
        )

    await retry_update(lambda: client.get(NODECLAIMS, claim_name), apply)


async def set_command_annotations(
    client: Client, claim_name: str, values: Mapping[str, str] | None
) -> None:
    """Write the command's annotations on a candidate NodeClaim (None removes them)."""

    async def apply(claim: JSON) -> None:
        meta = claim.get("metadata") or {}
        current = meta.get("annotations") or {}
        if values is None:
            if not any(k in current for k in COMMAND_ANNOTATIONS):
                return
            patch: dict[str, str | None] = dict.fromkeys(COMMAND_ANNOTATIONS)
        else:
            if all(current.get(k) == v for k, v in values.items()):
                return
            patch = dict(values)
        await client.patch(
            NODECLAIMS,
            claim_name,
            {"metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": patch}},
        )

    await retry_update(lambda: client.get(NODECLAIMS, claim_name), apply)
