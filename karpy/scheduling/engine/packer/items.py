"""What the packer packs and fills: items of identical pods, and the new nodes being filled.

The checks here run once per pod and node the packer considers, so they are plain functions
over a node's running totals, with no allocation on the common path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from karpy.scheduling.hostports import conflicts
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirements

__all__ = ["FilledNode", "Item", "Merged", "OpenNode", "alignment", "load_after", "room"]


@dataclass(eq=False, slots=True)
class Item:
    """Identical pods bound for this pool with identical (pinned) requirements."""

    vec: tuple[int, ...]
    reqs: Requirements
    mask: int
    pods: list[PodView]
    # hostname terms: ids of terms selecting these pods; terms these pods own
    matched: tuple[int, ...] = ()
    anti: tuple[int, ...] = ()
    spread: tuple[tuple[int, int], ...] = ()
    affinity: tuple[int, ...] = ()
    ports: frozenset[tuple[str, str, int]] = frozenset()
    value: float = 0.0
    seed: bool = False
    placed: int = 0
    failed: list[PodView] = field(default_factory=list)

    @property
    def constrained(self) -> bool:
        return bool(self.matched or self.anti or self.spread or self.affinity or self.ports)


class OpenNode:
    """A NodeClaim being filled."""

    __slots__ = (
        "anti",
        "cap",
        "caps",
        "contents",
        "counts",
        "full",
        "idx",
        "load",
        "mask",
        "ports",
        "reqs",
        "sig",
        "target",
        "used",
        "version",
    )

    def __init__(
        self, idx: int, reqs: Requirements, sig: int, target: int, cap: tuple[int, ...], mask: int
    ) -> None:
        self.idx = idx
        self.reqs = reqs
        self.sig = sig
        self.target = target
        self.cap = cap
        self.used = [0] * len(cap)
        self.mask = mask
        self.counts: dict[int, int] = {}
        self.anti: set[int] = set()
        self.caps: dict[int, int] = {}
        self.ports: set[tuple[str, str, int]] = set()
        self.contents: list[tuple[Item, int]] = []
        self.load = 0.0
        self.version = 0
        self.full = False


class FilledNode(NamedTuple):
    """A packed node and the pods placed on it."""

    node: OpenNode
    pods: list[PodView]


class Merged(NamedTuple):
    """A node's requirements after it takes an item, and their signature (a small int)."""

    sig: int
    reqs: Requirements


def room(node: OpenNode, item: Item, want: int) -> int:
    """How many pods of `item` (up to `want`) the node can take now."""
    used = node.used
    cap = node.cap
    k = want
    for r, v in enumerate(item.vec):
        if v:
            free = cap[r] - used[r]
            if free < v:
                return 0
            q = free // v
            if q < k:
                k = q
    if not item.constrained and not node.anti and not node.caps:
        return k
    if item.ports:
        if conflicts(item.ports, node.ports):
            return 0
        k = min(k, 1)
    counts = node.counts
    for t in item.anti:
        if counts.get(t, 0):
            return 0
    for t in item.matched:
        if t in node.anti:
            return 0
        if t in item.anti:
            k = min(k, 1)
        c = node.caps.get(t)
        if c is not None:
            k = min(k, c - counts.get(t, 0))
    for t, skew in item.spread:
        if t in item.matched:
            k = min(k, skew - counts.get(t, 0))
        elif counts.get(t, 0) > skew:
            return 0
    for t in item.affinity:
        if not counts.get(t, 0) and node.contents:
            return 0
    return max(k, 0)


def alignment(node: OpenNode, item: Item) -> float:
    """Cosine between the pod's requests and the node's free capacity (both relative to
    the node's size): high when the pod is shaped like the room left, so memory-heavy
    pods go to memory-rich nodes and the mix the LP bought is used as intended."""
    cap = node.cap
    used = node.used
    dot = nv = nf = 0.0
    for r, v in enumerate(item.vec):
        c = cap[r]
        if c <= 0:
            continue
        a = v / c
        b = (c - used[r]) / c
        dot += a * b
        nv += a * a
        nf += b * b
    if nv <= 0 or nf <= 0:
        return 0.0
    return dot / math.sqrt(nv * nf)


def load_after(node: OpenNode, item: Item) -> float:
    """The node's load (its fullest resource's share) after taking one pod of `item`."""
    cap = node.cap
    used = node.used
    load = 0.0
    for r, v in enumerate(item.vec):
        u = used[r] + v
        if u:
            c = cap[r]
            x = u / c if c > 0 else float("inf")
            if x > load:
                load = x
    return load if load > node.load else node.load
