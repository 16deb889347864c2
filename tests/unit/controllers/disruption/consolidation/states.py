"""Constructed cluster states for the consolidation tests: kwok nodes of a given type, zone and
capacity type with their settled NodeClaims, pods bound to them, one NodePool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from karpy.apis.v1 import validate_nodepool
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.controllers.disruption.consolidation import Snapshot, build_snapshot
from karpy.scheduling import format_resources
from karpy.scheduling.engine import NodePoolTemplate
from karpy.state.inputs import nodepool_nodeclass, state_nodes
from tests.kit import nodepool, pod

JSON = dict[str, Any]
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SETTLED = "2026-12-01T10:00:00Z"
TYPES = {t.name: t for t in kwok_instance_types()}
ON_DEMAND_AMD64 = (
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
)


def machine(
    name: str,
    instance_type: str,
    *,
    zone: str = "test-zone-a",
    capacity_type: str = "on-demand",
    pool: str = "default",
    annotations: Mapping[str, str] | None = None,
    consolidatable: bool = True,
) -> tuple[JSON, JSON]:
    """A registered, initialized Node and its NodeClaim."""
    it = TYPES[instance_type]
    labels = {
        **it.requirements.labels(),
        "karpenter.sh/nodepool": pool,
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": zone,
        "karpenter.sh/capacity-type": capacity_type,
        "kubernetes.io/hostname": name,
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
    }
    pid = f"kwok://{name}"
    meta: JSON = {"name": name, "labels": labels}
    if annotations:
        meta["annotations"] = dict(annotations)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {"providerID": pid},
        "status": {
            "capacity": format_resources(it.capacity),
            "allocatable": format_resources(it.allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    types = ["Launched", "Registered", "Initialized", "Ready"]
    if consolidatable:
        types.append("Consolidatable")
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": dict(labels), "creationTimestamp": SETTLED},
        "spec": {},
        "status": {
            "providerID": pid,
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": SETTLED} for t in types
            ],
        },
    }
    return node, claim


def app_pod(name: str, node: str, cpu: str, memory: str = "1Gi", **kw: Any) -> JSON:
    """A running pod of a ReplicaSet, bound to `node`, requesting `cpu` and `memory`."""
    return pod(
        name,
        node=node,
        requests={"cpu": cpu, "memory": memory},
        owner={"kind": "ReplicaSet", "name": "rs", "controller": True},
        created=SETTLED,
        status={"phase": "Running", "startTime": SETTLED},
        **kw,
    )


def snapshot(
    machines: Sequence[tuple[JSON, JSON]],
    pods: Sequence[JSON],
    *,
    pdbs: Sequence[JSON] = (),
    requirements: Sequence[Mapping[str, Any]] = ON_DEMAND_AMD64,
    policy: str = "WhenEmptyOrUnderutilized",
    budgets: Sequence[Mapping[str, Any]] | None = None,
    spot_to_spot: bool = False,
    min_savings: float = 0.0,
    configs: Sequence[JSON] = (),
    overlays: Sequence[JSON] = (),
) -> Snapshot:
    raw = nodepool("default", requirements=requirements, policy=policy, budgets=budgets)
    raw["spec"]["disruption"]["consolidateAfter"] = "0s"
    pool = validate_nodepool(raw)
    template = NodePoolTemplate.from_nodepool(pool.to_dict(), list(TYPES.values()))
    nodes = state_nodes(
        nodes=[m[0] for m in machines], nodeclaims=[m[1] for m in machines], pods=pods
    )
    return build_snapshot(
        nodes=nodes,
        nodepools={"default": pool},
        templates=[template],
        pdbs=pdbs,
        now=NOW,
        spot_to_spot=spot_to_spot,
        min_savings=min_savings,
        configs=configs,
        nodeclasses={"default": nodepool_nodeclass(raw)},
        overlays=overlays,
    )
