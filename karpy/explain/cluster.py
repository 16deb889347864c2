"""The cluster as `explain` reads it: one list of each kind, then the same state the
controller's informers feed (state nodes, validated NodePools, PDBs, budgets). A node whose
NodeClaim carries a disruption command is marked for deletion, as the controller's state marks
the nodes of the commands it runs (no method takes it; budgets count it as disrupting)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from karpy.apis.errors import ValidationError
from karpy.apis.v1 import NodePool, validate_nodepool
from karpy.controllers.disruption.blockers import REASON_OF
from karpy.controllers.disruption.budgets import BudgetState, budget_states
from karpy.controllers.disruption.candidates import PdbLimits
from karpy.controllers.disruption.orchestration.marks import ANNOTATION_COMMAND, annotation
from karpy.simulation.catalogchoice import choose_catalog
from karpy.simulation.live import list_cluster, nodeclass_kinds, objects_from_cluster
from karpy.simulation.scenario import ScenarioObjects
from karpy.state import StateNode
from karpy.state.inputs import state_nodes

__all__ = ["ClusterView", "read_cluster"]

JSON = dict[str, Any]


@dataclass
class ClusterView:
    listed: dict[str, list[JSON]]
    nodes: list[StateNode]
    nodepools: dict[str, NodePool]
    pdbs: PdbLimits
    now: datetime
    budgets: dict[str, dict[str, BudgetState]]
    warnings: list[str] = field(default_factory=list)
    _objects: ScenarioObjects | None = None

    def objects(self) -> ScenarioObjects:
        """The scenario `karpy simulate --from-cluster` would plan with (catalogue chosen from
        the NodePools' NodeClass kinds)."""
        if self._objects is None:
            types = choose_catalog(None, nodeclass_kinds(self.listed))
            self._objects = objects_from_cluster(
                self.listed, instance_types=types, warnings=self.warnings
            )
        return self._objects

    def node(self, name: str) -> StateNode | None:
        """A node by its Node or NodeClaim name."""
        return next(
            (n for n in self.nodes if name in (n.node_name, n.nodeclaim_name)),
            None,
        )


def _pools(raw: list[JSON], warnings: list[str]) -> dict[str, NodePool]:
    out: dict[str, NodePool] = {}
    for item in raw:
        try:
            pool = validate_nodepool(item)
        except (ValidationError, ValueError) as err:
            warnings.append(f"NodePool {(item.get('metadata') or {}).get('name')}: {err}")
            continue
        out[pool.name] = pool
    return out


def view_of(listed: Mapping[str, list[JSON]], *, now: datetime | None = None) -> ClusterView:
    """The state built from listed objects (kind plural -> items)."""
    now = now or datetime.now(UTC)
    warnings: list[str] = []
    nodes = [
        # a node in a disruption command is marked for deletion, as the controller marks it
        dataclasses.replace(n, marked=True) if annotation(n.nodeclaim, ANNOTATION_COMMAND) else n
        for n in state_nodes(
            nodes=listed["nodes"], nodeclaims=listed["nodeclaims"], pods=listed["pods"]
        )
    ]
    pools = _pools(listed["nodepools"], warnings)
    return ClusterView(
        listed=dict(listed),
        nodes=nodes,
        nodepools=pools,
        pdbs=PdbLimits(listed["poddisruptionbudgets"]),
        now=now,
        budgets={
            reason: budget_states(nodes, pools, reason=reason, now=now)
            for reason in REASON_OF.values()
        },
        warnings=warnings,
    )


def read_cluster(*, kubeconfig: str | None, context: str | None) -> ClusterView:
    """List the cluster once (raises `KubeError`/`OSError` when it cannot be read)."""
    return view_of(asyncio.run(list_cluster(kubeconfig=kubeconfig, context=context)))
