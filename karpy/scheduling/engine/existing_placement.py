"""Placing pending pods on existing nodes, in Karpenter's node order.

Every class tries the existing nodes before any new capacity: initialized nodes first, then by
name (see existing.py for how the nodes with room are found). Pods without topology constraints
fill the nodes in bulk; pods with them go one at a time, each to the first node that keeps
every spread and (anti-)affinity, as Karpenter places them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from karpy.apis.v1.labels import LABEL_HOSTNAME
from karpy.scheduling.engine.domains import ClassTopology, Topology
from karpy.scheduling.engine.existing import ExistingNodes, NodeView
from karpy.scheduling.engine.podclasses import PodClass
from karpy.scheduling.engine.preferences import Constraints
from karpy.scheduling.hostports import conflicts
from karpy.scheduling.pods import PodView

__all__ = ["ExistingPlacement"]


class ExistingPlacement:
    """The pods placed on existing nodes in one solve, by node name."""

    def __init__(
        self,
        cluster: ExistingNodes,
        topology: Topology,
        namespace_labels: Mapping[str, Mapping[str, str]],
    ) -> None:
        self.cluster = cluster
        self.nodes = cluster.nodes
        self.topology = topology
        self.ns_labels = namespace_labels
        self.placed: dict[str, list[PodView]] = {e.node.name: [] for e in self.nodes}

    def place(
        self, cls: PodClass, eff: Constraints, topo: ClassTopology, pods: list[PodView]
    ) -> list[PodView]:
        """Fill existing nodes in order and return the pods left over; only nodes with room
        whose shape may admit the class are visited (see existing.py)."""
        cluster = self.cluster
        vec = cls.vec
        nodes = cluster.candidates(vec, eff.admission)
        if not topo.simple:
            return self._one_by_one(cls, eff, topo, pods, nodes)
        total = len(pods)
        start = 0
        for i in nodes.tolist():
            if start >= total:
                break
            k = cluster.room(i, vec, total - start)
            e = self.nodes[i]
            self.topology.record(cls, eff, e.labels, k)
            cluster.take(i, vec, k)
            self.placed[e.node.name].extend(pods[start : start + k])
            start += k
        return pods[start:] if start else pods

    def _one_by_one(
        self,
        cls: PodClass,
        eff: Constraints,
        topo: ClassTopology,
        pods: list[PodView],
        nodes: npt.NDArray[np.intp],
    ) -> list[PodView]:
        """Pods with topology constraints, as Karpenter places them: each goes to the first
        node in order that takes it now. A node's zonal verdict is shared by every node of its
        domains and can change with each pod, so it is asked per domain and pod; room, host
        ports and hostname constraints only get tighter, so each domain's list of nodes is
        walked once, past the nodes that can no longer take a pod of the class."""
        cluster = self.cluster
        vec = cls.vec
        ports = cls.pod.host_ports
        by_domains: dict[tuple[str | None, ...], list[int]] = {}
        ids = cluster.domain_ids(topo.keys)[nodes]
        for u in np.unique(ids).tolist():
            members: list[int] = nodes[ids == u].tolist()
            labels = self.nodes[members[0]].labels
            by_domains[tuple(labels.get(k) for k in topo.keys)] = members
        heads = dict.fromkeys(by_domains, 0)
        placed = 0
        for pod in pods:
            best = -1
            for domains, members in by_domains.items():
                h = heads[domains]
                if h >= len(members) or not self._domains_ok(eff, topo, domains):
                    continue
                while h < len(members):
                    e = self.nodes[members[h]]
                    if (
                        cluster.room(e.idx, vec, 1) > 0
                        and not conflicts(ports, e.ports)
                        and self._host_ok(e, cls, topo)
                    ):
                        break
                    h += 1
                heads[domains] = h
                if h < len(members) and (best < 0 or members[h] < best):
                    best = members[h]
            if best < 0:
                break  # the rest of the class is refused alike
            e = self.nodes[best]
            self.topology.record(cls, eff, e.labels, 1)
            cluster.take(best, vec, 1)
            e.ports.update(ports)
            self.placed[e.node.name].append(pod)
            placed += 1
        return pods[placed:] if placed else pods

    def _domains_ok(
        self, eff: Constraints, topo: ClassTopology, domains: tuple[str | None, ...]
    ) -> bool:
        """Whether a node in these domains (one per key of `topo.keys`) keeps the class's
        zonal (non-hostname) constraints; the same for every node of those domains."""
        reqs = eff.alternatives[0]
        for key, d in zip(topo.keys, domains, strict=True):
            if d is None:
                if topo.spread.get(key) or topo.affinity.get(key):
                    return False
                continue
            candidates = self.topology.known_domains(key)
            if self.topology.domain_ok(topo, eff, key, d, reqs, candidates) is not None:
                return False
        return True

    def _host_ok(self, e: NodeView, cls: PodClass, topo: ClassTopology) -> bool:
        """Whether the node keeps the class's hostname constraints. Placing pods of the class
        only adds to the counts these read, so once a node fails it fails for the class."""
        if not topo.hostname:
            return True
        key = LABEL_HOSTNAME
        d = e.labels[key]
        for s, g, self_match in topo.spread.get(key, ()):
            if g.count(d) + (1 if self_match else 0) > s.max_skew:
                return False
        for g in topo.affinity.get(key, ()):
            if g.count(d) == 0 and (g.counts or not g.selects(cls.pod, self.ns_labels)):
                return False
        for g in topo.anti.get(key, ()):
            if g.count(d) > 0:
                return False
        return all(g.owners.get(d, 0) <= 0 for g in topo.inverse.get(key, ()))
