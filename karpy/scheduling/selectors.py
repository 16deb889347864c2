"""Label selectors (matchLabels + matchExpressions), frozen so they can key topology groups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LabelSelector", "SelectorError"]

_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(ValueError):
    """A label selector is malformed."""


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``exprs`` is a sorted tuple of (key, operator, sorted values)."""

    exprs: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # A nil selector matches nothing; an empty one matches everything.
    nil: bool = False

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any] | None, *, field: str = "labelSelector"
    ) -> LabelSelector:
        if raw is None:
            return cls(nil=True)
        exprs: set[tuple[str, str, tuple[str, ...]]] = set()
        for key, val in (raw.get("matchLabels") or {}).items():
            exprs.add((str(key), "In", (str(val),)))
        for i, expr in enumerate(raw.get("matchExpressions") or ()):
            op = expr.get("operator")
            if op not in _OPS:
                raise SelectorError(f"{field}.matchExpressions[{i}].operator: {op!r} unsupported")
            values = tuple(sorted(str(v) for v in expr.get("values") or ()))
            if op in ("In", "NotIn") and not values:
                raise SelectorError(f"{field}.matchExpressions[{i}].values: required for {op}")
            exprs.add((str(expr.get("key", "")), str(op), values))
        return cls(tuple(sorted(exprs)))

    def with_exprs(self, *extra: tuple[str, str, tuple[str, ...]]) -> LabelSelector:
        if self.nil or not extra:
            return self
        return LabelSelector(tuple(sorted(set(self.exprs) | set(extra))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nil:
            return False
        for key, op, values in self.exprs:
            present = key in labels
            if op == "In":
                if not present or labels[key] not in values:
                    return False
            elif op == "NotIn":
                if present and labels[key] in values:
                    return False
            elif op == "Exists":
                if not present:
                    return False
            elif present:
                return False
        return True

    def __str__(self) -> str:
        if self.nil:
            return "<none>"
        parts = []
        for key, op, values in self.exprs:
            if op == "In" and len(values) == 1:
                parts.append(f"{key}={values[0]}")
            elif op in ("In", "NotIn"):
                parts.append(f"{key} {op.lower()} ({','.join(values)})")
            elif op == "Exists":
                parts.append(key)
            else:
                parts.append(f"!{key}")
        return ",".join(parts) or "<all>"
