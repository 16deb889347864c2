"""The NodePool hash: a fingerprint of the NodeClaim template that static drift compares.

Karpenter hashes `spec.template` with sets taken as sets and zero values ignored, leaving out
`requirements` (requirements drift is checked separately). We hash the same content in a
canonical JSON form; the value is a decimal unsigned 64-bit number as Karpenter's. The hash is
stamped with karpy's own `NODEPOOL_HASH_VERSION`, so a NodeClaim hashed by Karpenter (another
version) is never compared against ours: the hash controller re-stamps it instead.

Normalisations, so that equal meaning gives an equal hash: `nodeClassRef` is read as
group/kind/name (the legacy `apiVersion` form counts as its group), durations as seconds, an
absent `expireAfter` as its default `720h`, and empty strings, lists, maps, zeros and `false` as
absent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from karpy.apis.duration import DurationError, parse_nillable_duration
from karpy.apis.v1 import NodePool, group_of_ref
from karpy.apis.v1.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION,
)

__all__ = [
    "NODEPOOL_HASH_VERSION",
    "hash_annotations",
    "nodepool_hash",
    "template_hash",
]

DEFAULT_EXPIRE_AFTER: Final = "720h"
_DURATION_FIELDS: Final = ("expireAfter", "terminationGracePeriod")

JSON = dict[str, Any]


def _template_of(pool: NodePool | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(pool, NodePool):
        return pool.spec.template.to_dict()
    spec = pool.get("spec") or {}
    template = spec.get("template") if isinstance(spec, Mapping) else None
    return template if isinstance(template, Mapping) else {}


def _duration(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        parsed = parse_nillable_duration(value)
    except DurationError:
        return value  # hash what is written; validation reports it elsewhere
    return "Never" if parsed is None else parsed.total_seconds()


def _normalise_spec(spec: Mapping[str, Any]) -> JSON:
    out: JSON = {k: v for k, v in spec.items() if k != "requirements"}
    ref = out.get("nodeClassRef")
    if isinstance(ref, Mapping):
        out["nodeClassRef"] = {
            "group": group_of_ref(dict(ref)),
            "kind": ref.get("kind"),
            "name": ref.get("name"),
        }
    out.setdefault("expireAfter", DEFAULT_EXPIRE_AFTER)
    for name in _DURATION_FIELDS:
        if name in out:
            out[name] = _duration(out[name])
    return out


def _canonical(value: Any) -> Any:
    """Drop zero values; turn lists into sorted, de-duplicated sets of canonical items."""
    if isinstance(value, Mapping):
        out = {str(k): _canonical(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if not _is_zero(v)}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_canonical(v) for v in value]
        encoded = {_dumps(v): v for v in items if not _is_zero(v)}
        return [encoded[k] for k in sorted(encoded)]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == "" or value == 0 or value in ({}, [])


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def template_hash(template: Mapping[str, Any]) -> str:
    """The hash of a raw `spec.template` (camelCase keys, as stored by the apiserver)."""
    spec = template.get("spec")
    normalised: JSON = {
        "metadata": template.get("metadata") or {},
        "spec": _normalise_spec(spec if isinstance(spec, Mapping) else {}),
    }
    digest = hashlib.sha256(_dumps(_canonical(normalised)).encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))


def nodepool_hash(pool: NodePool | Mapping[str, Any]) -> str:
    """The hash of a NodePool (model or raw dict) as written to `karpenter.sh/nodepool-hash`."""
    return template_hash(_template_of(pool))


def hash_annotations(pool: NodePool | Mapping[str, Any]) -> dict[str, str]:
    """The two annotations stamped on a NodePool and on each NodeClaim created from it."""
    return {
        ANNOTATION_NODEPOOL_HASH: nodepool_hash(pool),
        ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
    }
