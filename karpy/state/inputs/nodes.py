"""Existing nodes: Nodes joined to their NodeClaims, then as the scheduler sees them.

A node karpy can place pods on is a registered Node (joined to its NodeClaim by providerID) or
a NodeClaim that was launched but whose Node has not registered yet. NodeClaims not launched
(no providerID) are not nodes. The live cluster state and `karpy simulate` join the same way
here and turn the result into `ExistingNode`s with the same function, so both plan alike.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from karpy.scheduling.engine.model import ExistingNode
from karpy.scheduling.taints import Taint, TaintError
from karpy.state import pods as podutil
from karpy.state.inputs.pods import PodViews
from karpy.state.statenode import StateNode

__all__ = ["existing_node", "join_nodes", "node_key", "state_nodes"]

JSON = dict[str, Any]
Build = Callable[[str, JSON | None, JSON | None], StateNode]


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def node_key(node: Mapping[str, Any]) -> str:
    """A Node's key in cluster state: its providerID, or its name when it has none."""
    return str((node.get("spec") or {}).get("providerID") or "") or _name(node)


def join_nodes(
    *, nodes: Iterable[JSON], nodeclaims: Iterable[JSON], build: Build
) -> list[StateNode]:
    """Every node, sorted by name: each Node with its NodeClaim (by providerID), then each
    launched NodeClaim without a Node. `build(key, node, nodeclaim)` makes the `StateNode`."""
    claims_by_pid: dict[str, JSON] = {}
    for claim in nodeclaims:
        pid = str((claim.get("status") or {}).get("providerID") or "")
        if pid:
            claims_by_pid[pid] = claim
    out: list[StateNode] = []
    seen: set[str] = set()
    for node in nodes:
        key = node_key(node)
        seen.add(key)
        out.append(build(key, node, claims_by_pid.get(key)))
    for pid, claim in claims_by_pid.items():
        if pid not in seen:
            out.append(build(pid, None, claim))
    out.sort(key=lambda n: n.name)
    return out


def state_nodes(
    *, nodes: Iterable[JSON], nodeclaims: Iterable[JSON] = (), pods: Iterable[JSON] = ()
) -> list[StateNode]:
    """`StateNode`s from plain collections (a scenario): bound pods that have not finished go
    to their node."""
    bound: dict[str, list[JSON]] = defaultdict(list)
    for pod in pods:
        name = podutil.node_name(pod)
        if name and not podutil.is_terminal(pod):
            bound[name].append(pod)

    def build(key: str, node: JSON | None, claim: JSON | None) -> StateNode:
        pods_on = tuple(bound.get(_name(node), ())) if node is not None else ()
        return StateNode(key=key, node=node, nodeclaim=claim, pods=pods_on)

    return join_nodes(nodes=nodes, nodeclaims=nodeclaims, build=build)


def _taints(raw: Iterable[Mapping[str, Any]], *, strict: bool) -> tuple[Taint, ...]:
    out: list[Taint] = []
    for i, t in enumerate(raw):
        try:
            out.append(Taint.from_dict(t, field=f"spec.taints[{i}]"))
        except TaintError:
            if strict:
                raise
    return tuple(out)


def existing_node(node: StateNode, views: PodViews, *, strict: bool = False) -> ExistingNode:
    """The scheduler's view of a state node, with the pods already on it and those on their way
    to it (planned or nominated), which take its room and count for topology alike.

    `strict` raises `TaintError`/`PodError` for unreadable taints or pods (a scenario must be
    valid); otherwise they are left out (the API server validated them; karpy may read less).
    """
    pods = node.pods + node.planned
    return ExistingNode(
        name=node.name,
        labels=node.labels,
        allocatable=node.allocatable,
        capacity=node.capacity or None,
        taints=_taints(node.taints, strict=strict),
        pods=[views.view(p) for p in pods] if strict else views.views(pods),
        initialized=node.initialized,
        nodepool=node.nodepool,
    )
