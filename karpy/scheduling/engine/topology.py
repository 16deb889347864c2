"""Topology groups: pods counted per domain for spread constraints and pod (anti-)affinity.

A group is one (kind, topology key, label selector, namespaces) tuple; every pod whose constraint
names the same tuple shares it, so a thousand replicas share one group. Groups count the pods
they select per domain: a zone for zonal keys, a node name for ``kubernetes.io/hostname`` (only
for existing nodes; new nodes are the packer's business). Pods placed on new nodes are counted
under the domain they were pinned to, so the counts are exact rather than the lower estimate
Karpenter keeps for nodes whose zone is still open.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from karpy.apis.v1.labels import LABEL_HOSTNAME
from karpy.scheduling.pods import AffinityTerm, PodView, SpreadConstraint
from karpy.scheduling.selectors import LabelSelector

__all__ = ["AFFINITY", "ANTI", "SPREAD", "Group", "GroupKey", "group_key"]

SPREAD = "spread"
AFFINITY = "affinity"
ANTI = "anti"


class GroupKey(NamedTuple):
    """What makes two constraints count the same pods in the same domains."""

    kind: str  # SPREAD | AFFINITY | ANTI
    topology_key: str
    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None


def group_key(kind: str, term: AffinityTerm | SpreadConstraint, namespace: str) -> GroupKey:
    """The group a term of a pod in `namespace` counts in (a spread selects in its own pod's
    namespace only)."""
    if isinstance(term, SpreadConstraint):
        return GroupKey(SPREAD, term.topology_key, term.selector, frozenset({namespace}), None)
    return GroupKey(
        kind, term.topology_key, term.selector, term.namespaces, term.namespace_selector
    )


class Group:
    """Counts of selected pods per domain, plus (for anti-affinity) where the owners are."""

    __slots__ = (
        "counts",
        "id",
        "key",
        "kind",
        "namespace_selector",
        "namespaces",
        "owners",
        "selector",
        "topology_key",
    )

    def __init__(self, key: GroupKey, gid: int) -> None:
        self.key = key
        self.id = gid
        self.kind = key.kind
        self.topology_key = key.topology_key
        self.selector = key.selector
        self.namespaces = key.namespaces
        self.namespace_selector = key.namespace_selector
        self.counts: dict[str, int] = {}
        # domains holding pods that own this (required anti-affinity) term
        self.owners: dict[str, int] = {}

    @property
    def is_hostname(self) -> bool:
        return self.topology_key == LABEL_HOSTNAME

    def selects(self, pod: PodView, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if pod.namespace not in self.namespaces:
            if self.namespace_selector is None:
                return False
            if not self.namespace_selector.matches(namespace_labels.get(pod.namespace, {})):
                return False
        return self.selector.matches(pod.labels)

    def add(self, domain: str, n: int = 1) -> None:
        self.counts[domain] = self.counts.get(domain, 0) + n

    def add_owner(self, domain: str, n: int = 1) -> None:
        self.owners[domain] = self.owners.get(domain, 0) + n

    def count(self, domain: str) -> int:
        return self.counts.get(domain, 0)

    def min_count(self, domains: Iterable[str], min_domains: int | None) -> int:
        doms = list(domains)
        if not doms or (min_domains is not None and len(doms) < min_domains):
            return 0
        return min(self.counts.get(d, 0) for d in doms)

    def __repr__(self) -> str:
        return f"Group({self.kind} {self.topology_key} {self.selector} {self.counts})"
