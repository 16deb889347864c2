"""Existing nodes as the scheduler sees them: free room in one matrix, nodes grouped by shape.

Every pending pod class tries the existing nodes in Karpenter's order (initialized first, then
by name), and a cluster has hundreds or thousands of them. Two things keep that cheap:

* Nodes alike in everything but their name - the same labels apart from the hostname, the same
  taints - form one shape. Whether a class's tolerations and node requirements admit a node
  is decided once per shape and cached (per node only when the requirements name the hostname).
* The free room of every node is one integer matrix, so the nodes that can still take one pod of
  a class are found with one vectorised comparison, together with the shapes already known to
  refuse the class. Only those nodes are visited one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from karpy.apis.v1.labels import LABEL_HOSTNAME, TAINT_EFFECT_PREFER_NO_SCHEDULE
from karpy.scheduling.engine.model import ExistingNode
from karpy.scheduling.engine.pools import Dims
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.taints import Taint, Toleration, untolerated

__all__ = ["Admission", "ExistingNodes", "NodeView"]

_PNS = Toleration(operator="Exists", effect=TAINT_EFFECT_PREFER_NO_SCHEDULE)
_UNKNOWN, _NO, _YES = -1, 0, 1


class Admission(NamedTuple):
    """What decides whether a node admits a pod: its node requirement alternatives (one must
    be met) and its tolerations. Hashable: verdicts are cached per admission."""

    alternatives: tuple[Requirements, ...]
    tolerations: tuple[Toleration, ...]


class NodeView:
    """One existing node: its labels (hostname included), shape and host ports in use."""

    __slots__ = ("idx", "initial_free", "labels", "node", "ports", "shape", "taints")

    def __init__(
        self,
        idx: int,
        node: ExistingNode,
        labels: dict[str, str],
        shape: int,
        taints: tuple[Taint, ...],
    ) -> None:
        self.idx = idx
        self.node = node
        self.labels = labels
        self.shape = shape
        self.taints = taints
        self.initial_free: tuple[int, ...] = ()
        self.ports: set[tuple[str, str, int]] = set()
        for p in node.pods:
            self.ports.update(p.host_ports)


class _Daemon(NamedTuple):
    """A DaemonSet pod's requests (as a vector) and what decides which nodes it lands on."""

    vec: tuple[int, ...]
    admission: Admission
    ports: frozenset[tuple[str, str, int]]


class _Shape:
    __slots__ = ("reqs", "taints")

    def __init__(self, reqs: Requirements, taints: tuple[Taint, ...]) -> None:
        self.reqs = reqs  # from the labels, hostname left out
        self.taints = taints


class ExistingNodes:
    """The existing nodes of one solve, in the order pods try them."""

    def __init__(
        self, nodes: Sequence[ExistingNode], *, dims: Dims, daemons: Sequence[PodView]
    ) -> None:
        ordered = sorted(nodes, key=lambda n: (not n.initialized, n.name))
        self._shapes: list[_Shape] = []
        shape_index: dict[tuple[object, ...], int] = {}
        self.nodes: list[NodeView] = []
        for i, node in enumerate(ordered):
            labels = dict(node.labels)
            labels.setdefault(LABEL_HOSTNAME, node.name)
            taints = node.scheduling_taints()
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != LABEL_HOSTNAME))
            key = (rest, taints)
            shape = shape_index.get(key)
            if shape is None:
                shape = len(self._shapes)
                shape_index[key] = shape
                self._shapes.append(_Shape(Requirements.from_labels(dict(rest)), taints))
            self.nodes.append(NodeView(i, node, labels, shape, taints))
        self._full_reqs: dict[int, Requirements] = {}
        self._domain_ids: dict[tuple[str, ...], npt.NDArray[np.intp]] = {}
        self._admits: dict[Admission, tuple[bool, npt.NDArray[np.int8]]] = {}
        n, d = len(self.nodes), len(dims.names)
        self.shape_of: npt.NDArray[np.intp] = np.array(
            [v.shape for v in self.nodes], dtype=np.intp
        ).reshape(n)
        daemon_adms = [
            _Daemon(
                dims.vec(d.requests),
                Admission(tuple(d.requirement_alternatives()), (*d.tolerations, _PNS)),
                d.host_ports,
            )
            for d in daemons
        ]
        self.rows: list[list[int]] = [self._free(v, dims, daemon_adms) for v in self.nodes]
        for v, row in zip(self.nodes, self.rows, strict=True):
            v.initial_free = tuple(row)
        self.free: npt.NDArray[np.int64] = np.array(self.rows, dtype=np.int64).reshape(n, d)

    def __len__(self) -> int:
        return len(self.nodes)

    def __bool__(self) -> bool:
        return bool(self.nodes)

    # ---- preparation ------------------------------------------------------------------------

    def _free(self, view: NodeView, dims: Dims, daemons: Sequence[_Daemon]) -> list[int]:
        """Allocatable minus bound pods minus DaemonSet pods that will still land on it (whose
        host ports it records as taken)."""
        node = view.node
        used: dict[str, int] = {}
        daemon_used: dict[str, int] = {}
        for p in node.pods:
            acc = daemon_used if p.daemon else used
            for name, amount in p.requests.items():
                acc[name] = acc.get(name, 0) + amount
        for name, amount in daemon_used.items():
            used[name] = used.get(name, 0) + amount
        free = [a - u for a, u in zip(dims.vec(node.allocatable), dims.vec(used), strict=True)]
        width = len(free)
        ds_used = dims.vec(daemon_used)
        due = [0] * width
        for daemon in daemons:
            if not self.admits(view.idx, daemon.admission):
                continue
            # its port is taken even before its pod lands (an in-flight or new node)
            view.ports.update(daemon.ports)
            for r in range(width):
                due[r] += daemon.vec[r]
        for r in range(width):
            free[r] -= max(0, due[r] - ds_used[r])
        return free

    def requirements(self, idx: int) -> Requirements:
        """The node's requirements from its labels, hostname included (built on demand)."""
        got = self._full_reqs.get(idx)
        if got is None:
            view = self.nodes[idx]
            got = self._shapes[view.shape].reqs.add(
                Requirement(LABEL_HOSTNAME, complement=False, values=(view.labels[LABEL_HOSTNAME],))
            )
            self._full_reqs[idx] = got
        return got

    # ---- admission --------------------------------------------------------------------------

    def _table(self, adm: Admission) -> tuple[bool, npt.NDArray[np.int8]]:
        got = self._admits.get(adm)
        if got is None:
            per_node = any(LABEL_HOSTNAME in a for a in adm.alternatives)
            size = len(self.nodes) if per_node else len(self._shapes)
            got = (per_node, np.full(size, _UNKNOWN, dtype=np.int8))
            self._admits[adm] = got
        return got

    def admits(self, idx: int, adm: Admission) -> bool:
        """Whether the node's taints and labels admit a pod with these requirements."""
        per_node, table = self._table(adm)
        view = self.nodes[idx]
        slot = idx if per_node else view.shape
        known = int(table[slot])
        if known != _UNKNOWN:
            return known == _YES
        shape = self._shapes[view.shape]
        ok = untolerated(shape.taints, adm.tolerations) is None
        if ok:
            reqs = self.requirements(idx) if per_node else shape.reqs
            ok = any(reqs.strict_compatible(a) is None for a in adm.alternatives)
        table[slot] = _YES if ok else _NO
        return ok

    # ---- room -------------------------------------------------------------------------------

    def candidates(self, vec: Sequence[int], adm: Admission) -> npt.NDArray[np.intp]:
        """Nodes, in order, that admit a pod of `adm` and have room for one of `vec`.

        Admission is settled for every shape (or, when the hostname is named, every node)
        among the nodes with room that is not known yet, so each is judged once per
        admission however many classes share it."""
        if not self.nodes:
            return np.zeros(0, dtype=np.intp)
        room = np.ones(len(self.nodes), dtype=bool)
        for r, v in enumerate(vec):
            if v:
                room &= self.free[:, r] >= v
        per_node, table = self._table(adm)
        verdicts = table if per_node else table[self.shape_of]
        unknown = np.flatnonzero(room & (verdicts == _UNKNOWN))
        if unknown.size:
            if not per_node:
                # one node of each shape not judged yet
                _, first = np.unique(self.shape_of[unknown], return_index=True)
                unknown = unknown[first]
            for i in unknown.tolist():
                self.admits(i, adm)
            verdicts = table if per_node else table[self.shape_of]
        return np.flatnonzero(room & (verdicts == _YES))

    def domain_ids(self, keys: tuple[str, ...]) -> npt.NDArray[np.intp]:
        """Per node, a number naming its values of `keys` (equal values, equal numbers)."""
        got = self._domain_ids.get(keys)
        if got is None:
            ids: dict[tuple[str | None, ...], int] = {}
            got = np.array(
                [
                    ids.setdefault(tuple(v.labels.get(k) for k in keys), len(ids))
                    for v in self.nodes
                ],
                dtype=np.intp,
            ).reshape(len(self.nodes))
            self._domain_ids[keys] = got
        return got

    def room(self, idx: int, vec: Sequence[int], want: int) -> int:
        """How many pods of `vec` (at most `want`) fit in the node's free room."""
        row = self.rows[idx]
        k = want
        for r, v in enumerate(vec):
            if v:
                f = row[r]
                q = f // v if f >= v else 0
                if q < k:
                    k = q
        return k

    def take(self, idx: int, vec: Sequence[int], k: int) -> None:
        row = self.rows[idx]
        free = self.free
        for r, v in enumerate(vec):
            if v:
                row[r] -= v * k
                free[idx, r] = row[r]
