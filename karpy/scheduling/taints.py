"""Taints and tolerations with kube-scheduler's matching rules.

Karpenter checks every taint of a NodePool template (PreferNoSchedule included, until the
preference is relaxed) against a pod's tolerations, so this module answers one question: which
taint, if any, does a pod not tolerate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from karpy.apis.v1.labels import (
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
)

__all__ = ["EFFECTS", "Taint", "TaintError", "Toleration", "untolerated"]

EFFECTS = (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_PREFER_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)
_OPERATORS = ("Equal", "Exists", "Gt", "Lt")


class TaintError(ValueError):
    """A taint or toleration is malformed."""


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, field: str = "taint") -> Taint:
        key = raw.get("key")
        effect = raw.get("effect")
        if not key or not isinstance(key, str):
            raise TaintError(f"{field}.key: required")
        if effect not in EFFECTS:
            raise TaintError(f"{field}.effect: {effect!r} is not one of {', '.join(EFFECTS)}")
        return cls(key=key, effect=str(effect), value=str(raw.get("value") or ""))

    def to_dict(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, field: str = "toleration") -> Toleration:
        operator = raw.get("operator") or "Equal"
        if operator not in _OPERATORS:
            raise TaintError(f"{field}.operator: {operator!r} is not one of {_OPERATORS}")
        effect = raw.get("effect") or ""
        if effect and effect not in EFFECTS:
            raise TaintError(f"{field}.effect: {effect!r} is not one of {', '.join(EFFECTS)}")
        return cls(
            key=str(raw.get("key") or ""),
            operator=str(operator),
            value=str(raw.get("value") or ""),
            effect=str(effect),
        )

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if not self.key and self.operator != "Exists":
            return False
        if self.operator == "Exists":
            return True
        if self.operator == "Equal":
            return self.value == taint.value
        # Gt / Lt compare the taint's value with the toleration's, as integers.
        try:
            taint_value, mine = int(taint.value), int(self.value)
        except ValueError:
            return False
        return taint_value > mine if self.operator == "Gt" else taint_value < mine


def untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first taint none of `tolerations` tolerates, or None."""
    for taint in taints:
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
