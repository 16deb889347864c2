"""Pod views cached across simulations, and the one pod a DaemonSet adds to every node.

Pod views are the expensive part of a simulation's input (requests, affinity and spread
constraints parsed from the spec), so they are cached by UID, resourceVersion and volume
requirements: a pod whose claim gets bound changes its volume topology without a new
resourceVersion of its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpy.scheduling.pods import PodError, PodView, pod_view
from karpy.scheduling.requirements import Requirements

__all__ = ["PodViews", "daemonset_pod"]

_Key = tuple[str, str, tuple[Requirements, ...]]


class PodViews:
    """A bounded cache of `PodView`s keyed by (uid, resourceVersion, volume terms); safe across
    threads.

    `prune()` after a simulation drops every view that simulation did not use, so views of
    old resourceVersions and of deleted pods do not pile up. With `max_entries=0` nothing is
    cached: for a one-shot build (`karpy simulate`), which views each pod once.
    """

    def __init__(self, *, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._views: OrderedDict[_Key, PodView] = OrderedDict()
        self._used: set[_Key] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._views)

    def prune(self) -> None:
        with self._lock:
            for key in [k for k in self._views if k not in self._used]:
                del self._views[key]
            self._used.clear()

    def view(
        self,
        pod: Mapping[str, Any],
        *,
        daemon: bool | None = None,
        volume_terms: Sequence[Requirements] = (),
    ) -> PodView:
        """The pod's view; raises `PodError` for a spec the scheduler cannot read."""
        terms = tuple(volume_terms)
        if not self.max_entries:
            return pod_view(pod, daemon=daemon, volume_terms=terms)
        meta = pod.get("metadata") or {}
        key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""), terms)
        if key[0]:
            with self._lock:
                found = self._views.get(key)
                self._used.add(key)
            if found is not None:
                return found
        view = pod_view(pod, daemon=daemon, volume_terms=terms)
        if key[0]:
            with self._lock:
                self._views[key] = view
                if len(self._views) > self.max_entries:
                    self._views.popitem(last=False)
        return view

    def views(self, pods: Iterable[Mapping[str, Any]]) -> list[PodView]:
        """Views of the readable pods; unreadable ones are logged and left out."""
        out: list[PodView] = []
        for pod in pods:
            try:
                out.append(self.view(pod))
            except PodError as err:
                import structlog  # only on this path: `karpy simulate` never logs through it

                meta = pod.get("metadata") or {}
                structlog.get_logger("karpy.state").warning(
                    "ignoring unreadable pod",
                    Pod={"name": meta.get("name"), "namespace": meta.get("namespace")},
                    error=str(err),
                )
        return out


def daemonset_pod(daemonset: Mapping[str, Any]) -> dict[str, Any]:
    """The pod a DaemonSet's template makes: the overhead every node it selects carries.

    Its uid and resourceVersion derive from the DaemonSet's, so a cached view is rebuilt when
    the template changes.
    """
    meta = daemonset.get("metadata") or {}
    template = (daemonset.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or "") or f"{namespace}/{name}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-daemon",
            "namespace": namespace,
            "uid": f"daemonset/{uid}",
            "resourceVersion": str(meta.get("resourceVersion") or ""),
            "labels": dict(tmeta.get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": name,
                    "uid": str(meta.get("uid") or ""),
                    "controller": True,
                }
            ],
        },
        "spec": template.get("spec") or {},
    }
