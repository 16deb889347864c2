"""Readers of raw API objects: metadata, finalizers, timestamps and status conditions.

Informers hold objects as the API serves them (plain dicts), and every controller and the kwok
provider read the same few fields from them. One set of readers keeps their tolerance the same
everywhere: a missing or malformed field reads as absent, never as an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from karpy.apis.v1 import conditions, labels

__all__ = [
    "conditions_of",
    "format_time",
    "get_condition",
    "has_finalizer",
    "is_condition_true",
    "is_deleting",
    "is_node_ready",
    "label",
    "meta",
    "parse_time",
    "taint_matches",
]

JSON = dict[str, Any]


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def label(obj: Mapping[str, Any], key: str) -> str:
    """The value of label `key`; empty when unset."""
    return str((meta(obj).get("labels") or {}).get(key, ""))


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def has_finalizer(obj: Mapping[str, Any], finalizer: str = labels.FINALIZER_TERMINATION) -> bool:
    return finalizer in (meta(obj).get("finalizers") or ())


# -- timestamps -------------------------------------------------------------------------------


def parse_time(text: object) -> datetime | None:
    """An RFC 3339 timestamp from the API as an aware datetime; None if absent or malformed."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes `metav1.Time`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- status conditions ------------------------------------------------------------------------


def conditions_of(obj: Mapping[str, Any] | None) -> list[JSON]:
    """The object's `status.conditions` (a new list of the same dicts)."""
    status = (obj or {}).get("status")
    items = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def get_condition(
    obj_or_conditions: Mapping[str, Any] | Sequence[JSON] | None, type_: str
) -> JSON | None:
    """The condition of `type_` on an object (or in a list of conditions), if present."""
    items = (
        obj_or_conditions
        if obj_or_conditions is not None and not isinstance(obj_or_conditions, Mapping)
        else conditions_of(obj_or_conditions)
    )
    return next((c for c in items if c.get("type") == type_), None)


def is_condition_true(
    obj_or_conditions: Mapping[str, Any] | Sequence[JSON] | None, type_: str
) -> bool:
    found = get_condition(obj_or_conditions, type_)
    return found is not None and found.get("status") == conditions.STATUS_TRUE


def is_node_ready(node: Mapping[str, Any] | None) -> bool:
    """The kubelet's `Ready` condition is True."""
    return is_condition_true(node, conditions.CONDITION_READY)


def has_unregistered_taint(node: Mapping[str, Any]) -> bool:
    """The node still carries `karpenter.sh/unregistered`: karpy has not registered it, and
    kube-scheduler will not place pods on it."""
    return any(
        t.get("key") == labels.TAINT_UNREGISTERED_KEY
        for t in (node.get("spec") or {}).get("taints") or ()
    )


def taint_matches(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Kubernetes' `MatchTaint`: same key and effect."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")
