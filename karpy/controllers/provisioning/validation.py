"""Karpenter's pod validation: pods karpy will not provision for, and why.

A pod is ignored (it gets an event, never a NodeClaim) when it asks not to run on Karpenter's
nodes (`karpenter.sh/nodepool DoesNotExist`), when its node selector or node affinity uses a
restricted label, an invalid key or value, an unsupported operator or `matchFields`, or when a
PersistentVolumeClaim it mounts is missing or names a missing StorageClass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from karpy.apis.provider_labels import INSTANCE_TYPE_RESTRICTED_LABELS
from karpy.apis.v1 import labels

__all__ = ["PodValidationError", "validate_pod"]

JSON = Mapping[str, Any]

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"})
RESTRICTED_DOMAINS: Final = ("kubernetes.io", "k8s.io", labels.GROUP)
DOMAIN_EXCEPTIONS: Final = ("kops.k8s.io", "node-restriction.kubernetes.io", "node.kubernetes.io")


class PodValidationError(ValueError):
    """karpy will not provision for this pod; the message says why."""


def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def restricted(key: str, well_known: frozenset[str]) -> bool:
    """Karpenter's `IsRestrictedNodeLabel`: a key no NodePool can give a node."""
    if key in well_known:
        return False
    domain = _domain(key)
    if any(domain.endswith(d) for d in DOMAIN_EXCEPTIONS):
        return False
    if any(domain.endswith(d) for d in RESTRICTED_DOMAINS):
        return True
    return key in labels.RESTRICTED_LABELS or key in INSTANCE_TYPE_RESTRICTED_LABELS


def _qualified(key: str) -> str | None:
    prefix, sep, name = key.rpartition("/")
    if not name or len(name) > 63 or not _NAME.match(name):
        return f"key {key!r} is not a valid label key"
    if sep and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        return f"key {key!r} has an invalid prefix"
    return None


def _requirement(
    key: str, operator: str, values: Iterable[str], well_known: frozenset[str]
) -> None:
    key = labels.NORMALIZED_LABELS.get(key, key)
    if operator not in OPERATORS:
        raise PodValidationError(
            f"key {key} has an unsupported operator {operator} not in {sorted(OPERATORS)}"
        )
    if restricted(key, well_known):
        raise PodValidationError(
            f"label {key} is restricted; specify a well known label: "
            f"{sorted(well_known)}, or a custom label that does not use a restricted domain: "
            f"{sorted(RESTRICTED_DOMAINS)}"
        )
    problem = _qualified(key)
    if problem:
        raise PodValidationError(problem)
    vals = [str(v) for v in values]
    for value in vals:
        if len(value) > 63 or not _VALUE.match(value):
            raise PodValidationError(f"invalid value {value!r} for key {key}")
    if operator == "In" and not vals:
        raise PodValidationError(f"key {key} with operator In must have a value defined")
    if operator in ("Gt", "Lt", "Gte", "Lte") and (len(vals) != 1 or not vals[0].isdigit()):
        raise PodValidationError(
            f"key {key} with operator {operator} must have a single positive integer value"
        )


def _terms(pod: JSON) -> tuple[list[JSON], list[JSON]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    ) or []
    preferred = [
        p.get("preference") or {}
        for p in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ]
    return list(required), preferred


def validate_pod(
    pod: JSON,
    *,
    well_known: frozenset[str] = labels.WELL_KNOWN_LABELS,
    pvc: Callable[[str, str], JSON | None] | None = None,
    storage_class: Callable[[str], JSON | None] | None = None,
) -> None:
    """Raise `PodValidationError` when karpy must not provision for `pod`.

    `pvc(namespace, name)` and `storage_class(name)` look objects up (from the cache); without
    them volumes are not checked.
    """
    spec = pod.get("spec") or {}
    required, preferred = _terms(pod)
    first = list((required[0] if required else {}).get("matchExpressions") or ())
    for expr in first:
        if expr.get("key") == labels.LABEL_NODEPOOL and expr.get("operator") == "DoesNotExist":
            raise PodValidationError(
                f"configured to not run on a Karpenter provisioned node via the "
                f"{labels.LABEL_NODEPOOL} DoesNotExist requirement"
            )
    for key, value in (spec.get("nodeSelector") or {}).items():
        _requirement(str(key), "In", [str(value)], well_known)
    for term in [*required, *preferred]:
        if term.get("matchFields"):
            raise PodValidationError("node selector term with matchFields is not supported")
        for expr in term.get("matchExpressions") or ():
            _requirement(
                str(expr.get("key") or ""),
                str(expr.get("operator") or ""),
                expr.get("values") or (),
                well_known,
            )
    if pvc is None:
        return
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    for volume in spec.get("volumes") or ():
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            continue
        found = pvc(namespace, str(claim))
        if found is None:
            raise PodValidationError(f'failed to get persistentvolumeclaim "{namespace}/{claim}"')
        class_name = (found.get("spec") or {}).get("storageClassName")
        bound = (found.get("spec") or {}).get("volumeName")
        if (
            storage_class is not None
            and class_name
            and not bound
            and storage_class(str(class_name)) is None
        ):
            raise PodValidationError(
                f'failed to get storageclass "{class_name}" of persistentvolumeclaim '
                f'"{namespace}/{claim}"'
            )
