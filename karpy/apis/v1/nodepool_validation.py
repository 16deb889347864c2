"""Karpenter's runtime validation of a NodePool (its `ValidationSucceeded` condition).

The CRD cannot express every rule (label keys must be qualified names, a taint key and effect may
appear once across taints and startupTaints, ...). Karpenter checks these in a controller and
marks the NodePool not Ready instead of rejecting it; `runtime_validate` is that check.
"""

from __future__ import annotations

import re
from typing import Final

from karpy.apis.provider_labels import INSTANCE_TYPE_RESTRICTED_LABELS
from karpy.apis.v1 import labels
from karpy.apis.v1.common import OPERATORS, NodePoolRequirement, Taint
from karpy.apis.v1.nodepool import NodePool

_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_TAINT_EFFECTS: Final = (
    labels.TAINT_EFFECT_NO_SCHEDULE,
    labels.TAINT_EFFECT_PREFER_NO_SCHEDULE,
    labels.TAINT_EFFECT_NO_EXECUTE,
)


def qualified_name_error(key: str) -> str | None:
    """Why `key` is not a qualified name (`[prefix/]name`), or None when it is one."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return "prefix part must be non-empty"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why `value` is not a valid label value, or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character"
        )
    return None


def restricted_label_error(key: str) -> str | None:
    """Why a NodePool may not set or constrain label `key`, or None."""
    if key in labels.WELL_KNOWN_LABELS and key != labels.LABEL_NODEPOOL:
        return None
    if (
        key in labels.RESTRICTED_LABELS
        or key in INSTANCE_TYPE_RESTRICTED_LABELS
        or key == labels.LABEL_NODEPOOL
    ):
        return f"label {key} is restricted"
    domain = key.split("/", 1)[0] if "/" in key else ""
    if key not in labels.ALLOWED_KARPENTER_LABELS and any(
        domain == d or domain.endswith("." + d) for d in labels.RESTRICTED_LABEL_DOMAINS
    ):
        return f"label {key} is restricted; use a well known label or a custom domain"
    return None


def requirement_errors(path: str, req: NodePoolRequirement) -> list[str]:
    """The runtime problems of one NodePool-style requirement at `path` (a SchedulingConfig's
    requirements are checked by the same rules)."""
    errors = []
    reason = qualified_name_error(req.key) or restricted_label_error(req.key)
    if reason:
        errors.append(f"{path}.key: invalid key {req.key!r}: {reason}")
    if req.operator not in OPERATORS:
        errors.append(f"{path}.operator: unsupported operator {req.operator!r}")
    values = req.values or []
    valid = {v for v in values if label_value_error(v) is None}
    for value in values:
        reason = label_value_error(value)
        if reason:
            errors.append(f"{path}.values: invalid value {value!r}: {reason}")
    if req.key == labels.LABEL_CAPACITY_TYPE and req.operator == "In":
        for value in values:
            if value not in labels.CAPACITY_TYPES:
                errors.append(
                    f"{path}.values: invalid capacity type {value!r}, expected one of "
                    f"{', '.join(labels.CAPACITY_TYPES)}"
                )
    if req.min_values is not None and req.operator == "In" and len(valid) < req.min_values:
        errors.append(
            f"{path}.minValues: {req.min_values} values required but only {len(valid)} valid "
            "values are given"
        )
    return errors


def _taint_errors(field: str, taints: list[Taint], seen: set[tuple[str, str]]) -> list[str]:
    errors = []
    for index, taint in enumerate(taints):
        path = f"spec.template.spec.{field}[{index}]"
        reason = qualified_name_error(taint.key)
        if reason:
            errors.append(f"{path}.key: invalid taint key {taint.key!r}: {reason}")
        if taint.value is not None:
            reason = label_value_error(taint.value)
            if reason:
                errors.append(f"{path}.value: invalid taint value {taint.value!r}: {reason}")
        if taint.effect not in _TAINT_EFFECTS:
            errors.append(f"{path}.effect: invalid taint effect {taint.effect!r}")
        identity = (taint.key, taint.effect)
        if identity in seen:
            errors.append(
                f"{path}: duplicate taint {taint.key}:{taint.effect} across taints and "
                "startupTaints"
            )
        seen.add(identity)
    return errors


def runtime_validate(pool: NodePool) -> list[str]:
    """Every problem Karpenter's NodePool validation controller reports; empty when valid."""
    errors: list[str] = []
    template = pool.spec.template
    template_labels = (template.metadata.labels if template.metadata else None) or {}
    for key, value in sorted(template_labels.items()):
        reason = qualified_name_error(key) or restricted_label_error(key)
        if reason:
            errors.append(f"spec.template.metadata.labels: invalid key {key!r}: {reason}")
        reason = label_value_error(value)
        if reason:
            errors.append(f"spec.template.metadata.labels[{key}]: invalid value: {reason}")
    for index, requirement in enumerate(template.spec.requirements):
        errors.extend(requirement_errors(f"spec.template.spec.requirements[{index}]", requirement))
    seen: set[tuple[str, str]] = set()
    errors.extend(_taint_errors("taints", template.spec.taints or [], seen))
    errors.extend(_taint_errors("startupTaints", template.spec.startup_taints or [], seen))
    return errors
