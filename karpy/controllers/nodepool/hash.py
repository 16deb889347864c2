"""The NodePool hash: the fingerprint of the NodeClaim template that static drift compares.

It is Karpenter's own value, so a cluster moving between Karpenter and karpy sees no false drift:
Karpenter stamps `karpenter.sh/nodepool-hash` with `hashstructure.Hash(nodePool.Spec.Template,
FormatV2, {SlicesAsSets, IgnoreZeroValue, ZeroNil})` in decimal, and
`karpenter.sh/nodepool-hash-version` with `v3`. The golden table
`tests/unit/controllers/nodepool_hash_golden.json` holds hashes computed by Karpenter's code
(`hack/nodepool-hash`).

The hash is of the Go struct decoded from the JSON, which decides what counts:

- only the template's Go fields: `requirements` is tagged `hash:"ignore"`, unknown keys vanish;
- an absent or null field is a Go nil and is skipped, and so is `""`; an empty map or list is
  not nil and counts (a list is a set: reordering, and a duplicate pair, change nothing);
- durations count by value (`720h` = `720h0m0s`); `expireAfter: Never` is the zero
  `NillableDuration`, skipped like an absent one (the apiserver defaults absent to `720h`).

karpy-only inputs, which Karpenter's CRD rejects: a `nodeClassRef` in the legacy `apiVersion`
form hashes as its group; a malformed duration or time hashes as its string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpy.apis import hashstructure as hs
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


def _template_of(pool: NodePool | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(pool, NodePool):
        return pool.spec.template.to_dict()
    spec = pool.get("spec") or {}
    template = spec.get("template") if isinstance(spec, Mapping) else None
    return template if isinstance(template, Mapping) else {}


def _str(value: Any) -> int | None:
    """A Go string field: empty is its zero value."""
    if value is None or value == "":
        return None
    return hs.string(value if isinstance(value, str) else str(value))


def _string_map(value: Any) -> int | None:
    """A `map[string]string`: nil when absent; `{}` is an empty, non-nil map."""
    if not isinstance(value, Mapping):
        return None
    return hs.mapping({str(k): "" if v is None else str(v) for k, v in value.items()})


def _parsed_duration(value: Any) -> int | str:
    """Nanoseconds, or the string itself when Go could not parse it."""
    try:
        return hs.parse_go_duration(str(value))
    except hs.GoValueError:
        return str(value)


def _int64_or_string(value: int | str) -> int:
    return hs.int64(value) if isinstance(value, int) else hs.string(value)


def _duration(value: Any) -> int | None:
    """`*metav1.Duration`: a struct whose one field, `Duration`, is skipped when 0."""
    if value is None:
        return None
    parsed = _parsed_duration(value)
    inner = None if parsed == 0 else _int64_or_string(parsed)
    return hs.struct_of("Duration", [("Duration", inner)])


def _nillable_duration(value: Any) -> int | None:
    """Karpenter's `NillableDuration`: `Never` leaves it zero; otherwise its `*time.Duration`
    is set (0 included); its `Raw` bytes are not hashed."""
    if value is None or value == "Never":
        return None
    inner = _int64_or_string(_parsed_duration(value))
    return hs.struct_of("NillableDuration", [("Duration", inner)])


def _time(value: Any) -> int | None:
    """`*metav1.Time`: a struct around a `time.Time`."""
    if value is None:
        return None
    try:
        inner = hs.time_value(*hs.parse_go_time(str(value)))
    except hs.GoValueError:
        inner = hs.string(str(value))
    return hs.struct_of("Time", [("Time", inner)])


def _taint(value: Any) -> int:
    taint = value if isinstance(value, Mapping) else {}
    return hs.struct_of(
        "Taint",
        [
            ("Key", _str(taint.get("key"))),
            ("Value", _str(taint.get("value"))),
            ("Effect", _str(taint.get("effect"))),
            ("TimeAdded", _time(taint.get("timeAdded"))),
        ],
    )


def _taints(value: Any) -> int | None:
    if not isinstance(value, list):
        return None
    return hs.set_of(_taint(item) for item in value)


def _node_class_ref(value: Any) -> int | None:
    if not isinstance(value, Mapping):
        return None
    return hs.struct_of(
        "NodeClassReference",
        [
            ("Kind", _str(value.get("kind"))),
            ("Name", _str(value.get("name"))),
            ("Group", _str(group_of_ref(dict(value)))),
        ],
    )


def _object_meta(value: Any) -> int | None:
    """The template's `ObjectMeta` (labels and annotations only); zero when both are nil."""
    meta = value if isinstance(value, Mapping) else {}
    labels = _string_map(meta.get("labels"))
    annotations = _string_map(meta.get("annotations"))
    if labels is None and annotations is None:
        return None
    return hs.struct_of("ObjectMeta", [("Labels", labels), ("Annotations", annotations)])


def _template_spec(value: Any) -> int | None:
    spec = value if isinstance(value, Mapping) else {}
    fields = [
        ("Taints", _taints(spec.get("taints"))),
        ("StartupTaints", _taints(spec.get("startupTaints"))),
        ("NodeClassRef", _node_class_ref(spec.get("nodeClassRef"))),
        ("TerminationGracePeriod", _duration(spec.get("terminationGracePeriod"))),
        ("ExpireAfter", _nillable_duration(spec.get("expireAfter"))),
    ]
    # Go skips a struct field only when the whole struct is zero, ignored fields included: a
    # present `requirements` list makes an otherwise empty spec count.
    if all(h is None for _, h in fields) and not isinstance(spec.get("requirements"), list):
        return None
    return hs.struct_of("NodeClaimTemplateSpec", fields)


def template_hash(template: Mapping[str, Any]) -> str:
    """The hash of a raw `spec.template` (camelCase keys, as stored by the apiserver)."""
    value = hs.struct_of(
        "NodeClaimTemplate",
        [
            ("ObjectMeta", _object_meta(template.get("metadata"))),
            ("Spec", _template_spec(template.get("spec"))),
        ],
    )
    return str(value)


def nodepool_hash(pool: NodePool | Mapping[str, Any]) -> str:
    """The hash of a NodePool (model or raw dict) as written to `karpenter.sh/nodepool-hash`."""
    return template_hash(_template_of(pool))


def hash_annotations(pool: NodePool | Mapping[str, Any]) -> dict[str, str]:
    """The two annotations stamped on a NodePool and on each NodeClaim created from it."""
    return {
        ANNOTATION_NODEPOOL_HASH: nodepool_hash(pool),
        ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
    }
