"""Where the pods of nodes about to be disrupted would go: the provisioner's scheduling engine on
a snapshot of the cluster without those nodes. Pods that fit on the remaining nodes need nothing;
the others need the new NodeClaims of the result (the command's replacements).

A pod whose destination is a node that has not initialized is not schedulable for disruption,
as Karpenter's `UninitializedNodeError`: that node may never initialize (a startup taint nothing
removes), and a command counting on it would evict pods to nowhere. This is also what keeps a
candidate whose command was rolled back from being disrupted again at once: the replacement
the rollback kept is such a node, and the candidate's pods would go there."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import pydantic
import structlog

from karpy.apis.objects import is_condition_true, is_deleting
from karpy.apis.v1 import NodePool, conditions
from karpy.cloudprovider.types import CloudProvider
from karpy.kube.offload import run_off_loop
from karpy.scheduling.engine.model import NodePoolTemplate, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.state import Cluster, ClusterSnapshot, StateNode
from karpy.state import pods as podutil
from karpy.state.inputs import build_input

__all__ = [
    "buffer_room",
    "nodepool_templates",
    "simulate",
    "simulate_without",
    "uninitialized_destination",
]

log = structlog.get_logger("karpy.controllers.disruption")

JSON = dict[str, Any]
C = TypeVar("C")


async def nodepool_templates(
    cluster: Cluster, cloud_provider: CloudProvider
) -> list[NodePoolTemplate]:
    """The NodePools replacements may come from: Ready, not deleting, not static."""
    out: list[NodePoolTemplate] = []
    for raw in cluster.nodepools():
        if is_deleting(raw) or not is_condition_true(raw, conditions.CONDITION_READY):
            continue
        if (raw.get("spec") or {}).get("replicas") is not None:
            continue
        try:
            types = await cloud_provider.get_instance_types(NodePool.model_validate(raw))
            out.append(NodePoolTemplate.from_nodepool(raw, types))
        except (pydantic.ValidationError, ValueError) as err:
            log.error(
                "skipping nodepool",
                NodePool={"name": (raw.get("metadata") or {}).get("name")},
                error=str(err),
            )
    return out


def simulate(
    snapshot: ClusterSnapshot,
    without: Collection[str],
    pods: Sequence[JSON],
    templates: Sequence[NodePoolTemplate],
    *,
    buffers: bool = False,
) -> SchedulingResult:
    """Schedule `pods` on the snapshot's nodes minus those whose key is in `without`; with
    `buffers`, the CapacityBuffers' virtual pods too (drift replaces a node's pods only: the
    provisioner keeps the buffers' room)."""
    kept = dataclasses.replace(
        snapshot,
        nodes=tuple(n for n in snapshot.nodes if n.key not in without),
        buffers=snapshot.buffers if buffers else (),
    )
    built = build_input(kept.objects(pods, templates))
    result = schedule(built.input)
    result.errors.update(built.errors)
    _refuse_uninitialized(result, kept.nodes, pods)
    return result


def uninitialized_destination(node: StateNode) -> str:
    """Why a pod may not move to `node` (Karpenter's wording, so the events read alike)."""
    names = []
    if node.nodeclaim_name:
        names.append(f"nodeclaim/{node.nodeclaim_name}")
    if node.node_name:
        names.append(f"node/{node.node_name}")
    return "would schedule against uninitialized " + ", ".join(names or [node.name])


def _refuse_uninitialized(
    result: SchedulingResult, nodes: Sequence[StateNode], pods: Sequence[JSON]
) -> None:
    """Move the `pods` the plan put on nodes that have not initialized to its errors."""
    moving = {podutil.pod_key(p) for p in pods}
    waiting = {n.name: n for n in nodes if not n.initialized}
    for name, placed in result.existing.items():
        node = waiting.get(name)
        if node is None:
            continue
        why = uninitialized_destination(node)
        kept = []
        for p in placed:
            if p.key in moving:
                result.errors[p.key] = why
            else:
                kept.append(p)
        placed[:] = kept


async def simulate_without(
    cluster: Cluster,
    cloud_provider: CloudProvider,
    without: Collection[str],
    pods: Sequence[JSON],
) -> SchedulingResult:
    """`simulate` on a fresh snapshot, off the event loop."""
    templates = await nodepool_templates(cluster, cloud_provider)
    return await run_off_loop(simulate, cluster.snapshot(), without, pods, templates)


def buffer_room(snapshot: ClusterSnapshot, chosen: Sequence[C], key: Callable[[C], str]) -> list[C]:
    """The longest prefix of `chosen` (nodes without pods to move) that leaves the
    CapacityBuffers' virtual pods as much room as they have now: each node is added only if the
    buffers' pods still fit on the nodes that stay, without new capacity, as often as before.
    Without buffers every node may go."""
    if not snapshot.buffers or not chosen:
        return list(chosen)
    baseline = len(simulate(snapshot, (), (), (), buffers=True).errors)
    kept: list[C] = []
    for candidate in chosen:
        without = {key(c) for c in (*kept, candidate)}
        if len(simulate(snapshot, without, (), (), buffers=True).errors) > baseline:
            break
        kept.append(candidate)
    return kept
