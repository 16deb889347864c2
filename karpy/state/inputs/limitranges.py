"""LimitRange container defaults, applied where no admission controller applied them.

The API server's LimitRanger gives a container without a request its namespace's default
(`defaultRequest`, else `default`) when the pod is created. A DaemonSet's template never went
through that admission, yet its pods will: the overhead a new node carries must count the
defaults, as must pods `karpy simulate` makes from workload templates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["LimitRangeDefaults"]

JSON = Mapping[str, Any]


class LimitRangeDefaults:
    """The `Container` defaults of each namespace's LimitRanges (by name: the first one to set a
    resource wins, as each LimitRange only fills what is still missing)."""

    def __init__(self, limit_ranges: Iterable[JSON]) -> None:
        by_ns: dict[str, dict[str, str]] = {}
        ordered = sorted(
            limit_ranges,
            key=lambda lr: (
                str((lr.get("metadata") or {}).get("namespace") or "default"),
                str((lr.get("metadata") or {}).get("name") or ""),
            ),
        )
        for lr in ordered:
            ns = str((lr.get("metadata") or {}).get("namespace") or "default")
            found = by_ns.setdefault(ns, {})
            for item in (lr.get("spec") or {}).get("limits") or ():
                if item.get("type") != "Container":
                    continue
                merged = {**(item.get("default") or {}), **(item.get("defaultRequest") or {})}
                for name, amount in merged.items():
                    found.setdefault(str(name), str(amount))
        self._by_ns = {ns: d for ns, d in by_ns.items() if d}

    def __bool__(self) -> bool:
        return bool(self._by_ns)

    def apply(self, pod: JSON) -> JSON:
        """The pod with its containers' missing requests set from the defaults (a resource with a
        limit but no request keeps the limit as its request, as the API server defaults it); the
        pod itself if nothing changed. The resourceVersion names the defaults applied, so cached
        views follow a LimitRange change."""
        meta = pod.get("metadata") or {}
        defaults = self._by_ns.get(str(meta.get("namespace") or "default"))
        if not defaults:
            return pod
        spec = pod.get("spec") or {}
        changed = False
        out_spec = dict(spec)
        for field in ("containers", "initContainers"):
            containers = []
            for c in spec.get(field) or ():
                resources = c.get("resources") or {}
                requests = dict(resources.get("requests") or {})
                limits = resources.get("limits") or {}
                missing = {
                    k: v for k, v in defaults.items() if k not in requests and k not in limits
                }
                if missing:
                    changed = True
                    c = {**c, "resources": {**resources, "requests": {**requests, **missing}}}
                containers.append(c)
            if field in spec:
                out_spec[field] = containers
        if not changed:
            return pod
        applied = ",".join(f"{k}={v}" for k, v in sorted(defaults.items()))
        rv = f"{meta.get('resourceVersion') or ''}+limitrange:{applied}"
        return {**pod, "metadata": {**meta, "resourceVersion": rv}, "spec": out_spec}
