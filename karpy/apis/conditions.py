"""Status conditions on raw objects, with operatorpkg's rules; the one way karpy sets them.

- a True condition's reason is its own type; a False or Unknown one without a reason is
  `AwaitingReconciliation`;
- `lastTransitionTime` moves only when the status changes (a new reason or message keeps it);
- `observedGeneration` is the generation of the object the condition was computed from;
- the root `Ready` is computed from the declared dependents: True when all are True, else False
  if any is False, else Unknown, with reason `UnhealthyDependents` and a message listing them
  (`NodeClassReady=False`), as Karpenter reports it.

`Conditions` edits a list of raw condition dicts: the object's own list (in place) or a copy
(`Conditions.of(obj, ...)`); writers compare `items` with the object's before patching.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from karpy.apis.objects import conditions_of, format_time, get_condition, parse_time
from karpy.apis.v1 import conditions as c

__all__ = ["Conditions", "same_conditions"]

JSON = dict[str, Any]
_STATUSES = (c.STATUS_TRUE, c.STATUS_FALSE, c.STATUS_UNKNOWN)


class Conditions:
    """One object's status conditions, with its root condition and the dependents it derives
    from (none: no root is computed)."""

    def __init__(
        self,
        items: list[JSON] | None = None,
        *,
        now: datetime,
        generation: int | None = None,
        dependents: Sequence[str] = (),
        root: str = c.CONDITION_READY,
    ) -> None:
        self.items: list[JSON] = items if items is not None else []
        self.now = now
        self.generation = generation
        self.dependents = tuple(dependents)
        self.root = root

    @classmethod
    def of(
        cls, obj: Mapping[str, Any], *, now: datetime, dependents: Sequence[str] = ()
    ) -> Conditions:
        """A copy of `obj`'s conditions, stamped with `obj`'s generation."""
        generation = (obj.get("metadata") or {}).get("generation")
        return cls(
            [dict(x) for x in conditions_of(obj)],
            now=now,
            generation=generation if isinstance(generation, int) else None,
            dependents=dependents,
        )

    # -- reading --------------------------------------------------------------------------------

    def get(self, type_: str) -> JSON | None:
        return get_condition(self.items, type_)

    def status(self, type_: str) -> str | None:
        found = self.get(type_)
        return None if found is None else str(found.get("status"))

    def is_true(self, type_: str) -> bool:
        return self.status(type_) == c.STATUS_TRUE

    def since(self, type_: str) -> datetime | None:
        """When `type_` last changed status."""
        found = self.get(type_)
        return parse_time(found.get("lastTransitionTime")) if found else None

    # -- writing --------------------------------------------------------------------------------

    def set(self, type_: str, status: str, *, reason: str | None = None, message: str = "") -> bool:
        """Set `type_`; True if anything about it changed."""
        if status not in _STATUSES:
            raise ValueError(f"condition {type_}: status must be True, False or Unknown: {status}")
        if not reason:
            reason = type_ if status == c.STATUS_TRUE else c.REASON_AWAITING_RECONCILIATION
        found = self.get(type_)
        fresh: JSON = {"type": type_, "status": status, "reason": reason, "message": message}
        if self.generation is not None:
            fresh["observedGeneration"] = self.generation
        elif found is not None and "observedGeneration" in found:
            fresh["observedGeneration"] = found["observedGeneration"]
        if found is not None and found.get("status") == status:
            fresh["lastTransitionTime"] = found.get("lastTransitionTime") or format_time(self.now)
        else:
            fresh["lastTransitionTime"] = format_time(self.now)
        if found is None:
            self.items.append(fresh)
            return True
        if found == fresh:
            return False
        found.clear()
        found.update(fresh)
        return True

    def set_true(self, type_: str, *, message: str = "") -> bool:
        return self.set(type_, c.STATUS_TRUE, message=message)

    def set_false(self, type_: str, *, reason: str, message: str = "") -> bool:
        return self.set(type_, c.STATUS_FALSE, reason=reason, message=message)

    def set_unknown(self, type_: str, *, reason: str | None = None, message: str = "") -> bool:
        return self.set(type_, c.STATUS_UNKNOWN, reason=reason, message=message)

    def remove(self, type_: str) -> bool:
        before = len(self.items)
        self.items[:] = [x for x in self.items if x.get("type") != type_]
        return len(self.items) != before

    def initialize(self, types: Sequence[str] | None = None) -> None:
        """Add each missing condition (by default the dependents) as Unknown, awaiting
        reconciliation."""
        for type_ in self.dependents if types is None else types:
            if self.get(type_) is None:
                self.set_unknown(type_, message=c.MESSAGE_AWAITING_RECONCILIATION)

    def compute_root(self) -> bool:
        """Derive the root condition from the dependents (missing ones count as Unknown and
        are added so); True if it changed. Call once, after the dependents are set."""
        self.initialize()
        unhealthy = [d for d in self.dependents if not self.is_true(d)]
        if not unhealthy:
            return self.set_true(self.root)
        message = ", ".join(f"{d}={self.status(d)}" for d in unhealthy)
        if any(self.status(d) == c.STATUS_FALSE for d in unhealthy):
            return self.set_false(self.root, reason=c.REASON_UNHEALTHY_DEPENDENTS, message=message)
        return self.set_unknown(self.root, reason=c.REASON_UNHEALTHY_DEPENDENTS, message=message)

    def differs_from(self, obj: Mapping[str, Any]) -> bool:
        """Whether writing `items` would change `obj`'s conditions."""
        return not same_conditions(self.items, conditions_of(obj))


def same_conditions(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    """Equal ignoring order."""
    return sorted(a, key=_by_type) == sorted(b, key=_by_type)


def _by_type(condition: Mapping[str, Any]) -> str:
    return str(condition.get("type"))
