"""Turning a `ClusterSnapshot` into the scheduler's input types.

Runs in a worker thread: the snapshot is frozen and the raw objects it references are never
mutated, so nothing here races with the event loop. Pod views are the expensive part (requests,
affinity and spread constraints parsed from the spec), so they are cached by UID and
resourceVersion across simulations.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from karpy.scheduling.engine.model import ExistingNode
from karpy.scheduling.pods import PodError, PodView, pod_view
from karpy.scheduling.taints import Taint, TaintError
from karpy.state.statenode import StateNode

__all__ = ["PodViews", "existing_node"]

log = structlog.get_logger("karpy.state")


class PodViews:
    """A bounded cache of `PodView`s keyed by (uid, resourceVersion); safe across threads.

    `prune()` after a simulation drops every view that simulation did not use, so views of
    old resourceVersions and of deleted pods do not pile up.
    """

    def __init__(self, *, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._views: OrderedDict[tuple[str, str], PodView] = OrderedDict()
        self._used: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._views)

    def prune(self) -> None:
        with self._lock:
            for key in [k for k in self._views if k not in self._used]:
                del self._views[key]
            self._used.clear()

    def view(self, pod: Mapping[str, Any], *, daemon: bool | None = None) -> PodView:
        """The pod's view; raises `PodError` for a spec the scheduler cannot read."""
        meta = pod.get("metadata") or {}
        key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
        if key[0]:
            with self._lock:
                found = self._views.get(key)
                self._used.add(key)
            if found is not None:
                return found
        view = pod_view(pod, daemon=daemon)
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
                meta = pod.get("metadata") or {}
                log.warning(
                    "ignoring unreadable pod",
                    Pod={"name": meta.get("name"), "namespace": meta.get("namespace")},
                    error=str(err),
                )
        return out


def _taints(raw: Iterable[Mapping[str, Any]]) -> tuple[Taint, ...]:
    out: list[Taint] = []
    for i, t in enumerate(raw):
        try:
            out.append(Taint.from_dict(t, field=f"spec.taints[{i}]"))
        except TaintError:
            continue
    return tuple(out)


def existing_node(node: StateNode, views: PodViews) -> ExistingNode:
    """The scheduler's view of a state node, with the pods already on it and those on their way
    to it (planned or nominated), which take its room and count for topology alike."""
    return ExistingNode(
        name=node.name,
        labels=node.labels,
        allocatable=node.allocatable,
        capacity=node.capacity or None,
        taints=_taints(node.taints),
        pods=views.views(node.pods + node.planned),
        initialized=node.initialized,
        nodepool=node.nodepool,
    )
