"""Status conditions on raw objects, with operatorpkg's rules.

A condition keeps its `lastTransitionTime` while its status does not change (only reason and
message move), a new one starts Unknown with `AwaitingReconciliation`, and the root `Ready` is
True only when every dependent is: False if any dependent is False, else Unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from karpy.apis.objects import format_time, get_condition, parse_time
from karpy.apis.v1 import conditions as c

__all__ = ["ConditionSet"]

JSON = dict[str, Any]


class ConditionSet:
    """The conditions of one object's status, edited in place (a list of raw dicts)."""

    def __init__(self, status: JSON, *, now: datetime, generation: int | None) -> None:
        self.status = status
        self.now = now
        self.generation = generation
        self.items: list[JSON] = status.setdefault("conditions", [])

    def get(self, type_: str) -> JSON | None:
        return get_condition(self.items, type_)

    def is_true(self, type_: str) -> bool:
        found = self.get(type_)
        return found is not None and found.get("status") == c.STATUS_TRUE

    def since(self, type_: str) -> datetime | None:
        found = self.get(type_)
        return parse_time(found.get("lastTransitionTime")) if found else None

    def set(self, type_: str, status: str, *, reason: str = "", message: str = "") -> None:
        if status == c.STATUS_TRUE:
            reason = reason or type_
        found = self.get(type_)
        fresh: JSON = {"type": type_, "status": status, "reason": reason, "message": message}
        if self.generation is not None:
            fresh["observedGeneration"] = self.generation
        if found is not None and found.get("status") == status:
            fresh["lastTransitionTime"] = found.get("lastTransitionTime") or format_time(self.now)
        else:
            fresh["lastTransitionTime"] = format_time(self.now)
        if found is None:
            self.items.append(fresh)
        else:
            found.clear()
            found.update(fresh)

    def set_true(self, type_: str, *, message: str = "") -> None:
        self.set(type_, c.STATUS_TRUE, message=message)

    def set_unknown(self, type_: str, *, reason: str, message: str = "") -> None:
        self.set(type_, c.STATUS_UNKNOWN, reason=reason, message=message)

    def set_false(self, type_: str, *, reason: str, message: str = "") -> None:
        self.set(type_, c.STATUS_FALSE, reason=reason, message=message)

    def initialize(self, types: Sequence[str]) -> None:
        """Add each missing condition as Unknown/AwaitingReconciliation."""
        for type_ in types:
            if self.get(type_) is None:
                self.set_unknown(
                    type_,
                    reason=c.REASON_AWAITING_RECONCILIATION,
                    message=c.MESSAGE_AWAITING_RECONCILIATION,
                )

    def roll_up(self, root: str, dependents: Sequence[str]) -> None:
        """Set `root` from `dependents`."""
        unhealthy = [d for d in dependents if (self.get(d) or {}).get("status") != c.STATUS_TRUE]
        if not unhealthy:
            self.set_true(root)
            return
        failed = [d for d in unhealthy if (self.get(d) or {}).get("status") == c.STATUS_FALSE]
        message = ", ".join(
            f"{d}={(self.get(d) or {}).get('status', c.STATUS_UNKNOWN)}" for d in unhealthy
        )
        if failed:
            self.set_false(root, reason=c.REASON_UNHEALTHY_DEPENDENTS, message=message)
        else:
            self.set_unknown(root, reason=c.REASON_UNHEALTHY_DEPENDENTS, message=message)


def taint_matches(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Kubernetes' `MatchTaint`: same key and effect."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")
