"""Pending pods grouped into classes of identical pods, in Karpenter's queue order.

A thousand replicas of one Deployment ask the same questions of every node and pool, so the
scheduler asks them once per class. Classes are taken CPU descending, then memory, then age,
which is the order Karpenter's queue gives the pods themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

from karpy.apis.v1.labels import LABEL_NODEPOOL
from karpy.scheduling.engine.pools import Dims
from karpy.scheduling.engine.topology import Group
from karpy.scheduling.pods import PodView
from karpy.scheduling.resources import CPU, MEMORY

__all__ = ["PodClass", "pod_classes"]


class PodClass:
    """Identical pending pods: their requests as a vector and the topology groups selecting
    them (filled in once the solve's groups are known)."""

    __slots__ = ("id", "matched", "pod", "pods", "vec")

    def __init__(self, cid: int, pods: list[PodView], vec: tuple[int, ...]) -> None:
        self.id = cid
        self.pods = pods
        self.pod = pods[0]
        self.vec = vec
        self.matched: list[Group] = []


def pod_classes(pods: Sequence[PodView], dims: Dims) -> tuple[list[PodClass], dict[str, str]]:
    """The classes of the pods in queue order, and the pods refused before any placement
    (unsupported fields, or a requirement no NodePool's nodes can meet), with the reason."""
    errors: dict[str, str] = {}
    by_sig: dict[tuple[object, ...], list[PodView]] = {}
    for p in pods:
        if p.unsupported:
            errors[p.key] = p.unsupported
            continue
        if any(
            r.key == LABEL_NODEPOOL and r.operator == "DoesNotExist"
            for alt in p.requirement_alternatives()
            for r in alt.values()
        ):
            errors[p.key] = f"pod requires {LABEL_NODEPOOL} DoesNotExist"
            continue
        by_sig.setdefault(p.signature, []).append(p)
    classes: list[PodClass] = []
    for members in by_sig.values():
        members.sort(key=lambda p: (p.created, p.uid))
        classes.append(PodClass(len(classes), members, dims.vec(members[0].requests)))
    cpu = dims.index[CPU]
    mem = dims.index[MEMORY]
    classes.sort(key=lambda c: (-c.vec[cpu], -c.vec[mem], c.pod.created, c.pod.uid))
    for i, c in enumerate(classes):
        c.id = i
    return classes, errors
