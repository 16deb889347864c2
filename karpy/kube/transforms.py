"""Trim objects on ingest to the fields karpy reads, as client-go's transform functions do.

A watched pod arrives as 10-20 KiB of JSON (managedFields, env, probes, volume mounts, container
statuses); karpy reads perhaps a tenth of it. A `Mask` names what to keep:

- `True` keeps a value as is; `INTERN` keeps a string and interns it (namespaces, node names);
- a nested mapping keeps those keys of a dict (applied to each element of a list);
- `Shared(mask)` trims, then shares the result with every equal value seen before: the replicas
  of a Deployment hold one `containers` list, one `tolerations` list and one `labels` dict;
- a callable receives the raw value and returns the kept value (or None to drop it).

Trimmed objects are shared between cache readers and must never be mutated. `make_transform`
turns a mask into a transform; `POD_MASK` and `NODE_MASK` are the defaults for pods and nodes,
and `strip_managed_fields` is the default for everything else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "INTERN",
    "NODE_MASK",
    "POD_MASK",
    "Interner",
    "Mask",
    "Shared",
    "Transform",
    "make_transform",
    "strip_managed_fields",
    "trim_node",
    "trim_pod",
]

JSON = dict[str, Any]
Transform = Callable[[JSON], JSON]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class _Intern:
    def __repr__(self) -> str:
        return "INTERN"


INTERN: Final = _Intern()


class Shared:
    """Trim with `mask`, then deduplicate the result across objects."""

    __slots__ = ("mask",)

    def __init__(self, mask: Mask) -> None:
        self.mask = mask


Mask = bool | _Intern | Shared | Mapping[str, "Mask"] | Callable[[Any], Any]


class Interner:
    """Deduplicates equal JSON sub-trees; cleared when it grows past `max_entries`."""

    def __init__(self, *, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._table: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._table)

    def share(self, value: Any) -> Any:
        """The first-seen equal value (its strings interned), or `value` itself if new."""
        if isinstance(value, str):
            return sys.intern(value)
        if not isinstance(value, dict | list) or not value:
            return value
        # repr is exact for JSON values and runs in C; equal values that differ only in key
        # order merely miss the sharing.
        key = repr(value)
        found = self._table.get(key)
        if found is not None:
            return found
        if len(self._table) >= self.max_entries:
            self._table.clear()
        value = _intern_strings(value)
        self._table[key] = value
        return value


def _intern_strings(value: Any) -> Any:
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k): _intern_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_intern_strings(v) for v in value]
    return value


Step = Callable[[Any], Any]


def _intern_value(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


def _drop(value: Any) -> Any:
    return None


def _compile(mask: Mask, interner: Interner) -> Step | None:
    """Turn a mask into one function per node, once; None means "keep as is"."""
    if mask is True:
        return None
    if mask is False:
        return _drop
    if isinstance(mask, _Intern):
        return _intern_value
    if isinstance(mask, Shared):
        inner = _compile(mask.mask, interner)
        share = interner.share
        if inner is None:
            return share

        def shared(value: Any) -> Any:
            kept = inner(value)
            return None if kept is None else share(kept)

        return shared
    if isinstance(mask, Mapping):
        fields = [(key, _compile(sub, interner)) for key, sub in mask.items()]

        def keep(value: Any) -> Any:
            if isinstance(value, dict):
                out: JSON = {}
                for key, step in fields:
                    if key in value:
                        kept = value[key] if step is None else step(value[key])
                        if kept is not None:
                            out[key] = kept
                return out
            if isinstance(value, list):
                items = [keep(v) for v in value]
                return [v for v in items if v is not None]
            return None

        return keep
    return mask


def make_transform(mask: Mapping[str, Mask], *, interner: Interner | None = None) -> Transform:
    """A transform keeping only `mask`'s fields; pass one `interner` to share across resources."""
    step = _compile(mask, interner if interner is not None else Interner())
    assert step is not None

    def transform(obj: JSON) -> JSON:
        out: JSON = step(obj)
        return out

    return transform


def strip_managed_fields(obj: JSON) -> JSON:
    """Drop `metadata.managedFields` and the kubectl last-applied annotation; keep the rest."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    if "managedFields" not in meta and LAST_APPLIED not in (meta.get("annotations") or {}):
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": meta}


_INTERNED_VALUE_LENGTH = 128


def _annotations(value: Any) -> Any:
    """All but kubectl's copy of the manifest; keys and short values interned, since replicas
    of one template carry the same annotations."""
    if not isinstance(value, dict):
        return None
    kept = {
        sys.intern(k): sys.intern(v)
        if isinstance(v, str) and len(v) <= _INTERNED_VALUE_LENGTH
        else v
        for k, v in value.items()
        if k != LAST_APPLIED
    }
    return kept or None


def _host_ports(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    kept = [
        {k: p[k] for k in ("containerPort", "hostPort", "protocol", "hostIP") if k in p}
        for p in value
        if isinstance(p, dict) and p.get("hostPort")
    ]
    return kept or None


def _claim_volumes(value: Any) -> Any:
    """Only volumes that bind storage: PVC references and generic ephemeral volumes."""
    if not isinstance(value, list):
        return None
    kept: list[JSON] = []
    for volume in value:
        if not isinstance(volume, dict):
            continue
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"] or {}
            kept.append(
                {
                    "name": volume.get("name"),
                    "persistentVolumeClaim": {"claimName": claim.get("claimName")},
                }
            )
        elif "ephemeral" in volume:
            template = (volume["ephemeral"] or {}).get("volumeClaimTemplate") or {}
            spec = template.get("spec") or {}
            kept.append(
                {
                    "name": volume.get("name"),
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "spec": {
                                k: spec[k]
                                for k in ("storageClassName", "resources", "accessModes")
                                if k in spec
                            }
                        }
                    },
                }
            )
    return kept or None


_OWNER: Mapping[str, Mask] = {
    "apiVersion": INTERN,
    "kind": INTERN,
    "name": True,
    "uid": True,
    "controller": True,
    # Kept so that a list of owners written back from the cache (a merge patch replaces the
    # whole list) does not drop it: Karpenter's Node -> NodeClaim reference blocks deletion.
    "blockOwnerDeletion": True,
}
_CONTAINER: Mapping[str, Mask] = {
    "name": INTERN,
    "resources": {"requests": True, "limits": True, "claims": True},
    "ports": _host_ports,
    "restartPolicy": INTERN,
}
_CONDITION: Mapping[str, Mask] = {"type": INTERN, "status": INTERN, "reason": INTERN}

POD_MASK: Final[Mapping[str, Mask]] = {
    "metadata": {
        "name": True,
        "namespace": INTERN,
        "uid": True,
        "resourceVersion": True,
        "creationTimestamp": INTERN,
        "deletionTimestamp": INTERN,
        "deletionGracePeriodSeconds": True,
        "labels": Shared(True),
        "annotations": _annotations,
        "ownerReferences": Shared(_OWNER),
        "finalizers": Shared(True),
    },
    "spec": {
        "nodeName": INTERN,
        "nodeSelector": Shared(True),
        "affinity": Shared(True),
        "tolerations": Shared(True),
        "topologySpreadConstraints": Shared(True),
        "priority": True,
        "priorityClassName": INTERN,
        "preemptionPolicy": INTERN,
        "schedulerName": INTERN,
        "containers": Shared(_CONTAINER),
        "initContainers": Shared(_CONTAINER),
        "overhead": Shared(True),
        "resources": Shared(True),
        "resourceClaims": Shared(True),
        "volumes": _claim_volumes,
        "hostNetwork": True,
        "terminationGracePeriodSeconds": True,
    },
    "status": {
        "phase": INTERN,
        "reason": INTERN,
        "nominatedNodeName": INTERN,
        "startTime": INTERN,
        "conditions": Shared(_CONDITION),
    },
}
"""What karpy reads of a pod: scheduling constraints, requests, ownership, binding, phase, and
when it started (`karpenter.sh/do-not-disrupt` durations run from then)."""

_NODE_INFO: Mapping[str, Mask] = {
    "architecture": True,
    "operatingSystem": True,
    "kubeletVersion": True,
    "containerRuntimeVersion": True,
    "osImage": True,
    "kernelVersion": True,
}

NODE_MASK: Final[Mapping[str, Mask]] = {
    "metadata": {
        "name": INTERN,
        "uid": True,
        "resourceVersion": True,
        "creationTimestamp": True,
        "deletionTimestamp": True,
        "labels": Shared(True),
        "annotations": _annotations,
        "ownerReferences": Shared(_OWNER),
        "finalizers": Shared(True),
    },
    "spec": {"providerID": True, "taints": Shared(True), "unschedulable": True},
    "status": {
        "capacity": Shared(True),
        "allocatable": Shared(True),
        "phase": True,
        "conditions": {
            "type": INTERN,
            "status": INTERN,
            "reason": INTERN,
            "message": True,
            "lastTransitionTime": True,
        },
        "nodeInfo": Shared(_NODE_INFO),
        "addresses": True,
    },
}
"""What karpy reads of a node: identity, labels, taints, capacity, conditions; not images."""

_SHARED_INTERNER = Interner()
trim_pod: Final[Transform] = make_transform(POD_MASK, interner=_SHARED_INTERNER)
trim_node: Final[Transform] = make_transform(NODE_MASK, interner=_SHARED_INTERNER)
