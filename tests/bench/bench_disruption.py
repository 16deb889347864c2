"""Consolidation decision time and savings on a large snapshot (`make bench BENCH=disruption`).

The snapshot: 1,000 on-demand nodes of 8-CPU kwok types (c, s and m families, four zones), each
filled with 10 pods of 100 Deployments (10,000 pods), then half of the pods deleted at random
(seeded): every node is a consolidation candidate. Cases:

* ``decision-1000-nodes``: one loop decision (multi-node search, then single-node until the
  first command), and a pass that evaluates every candidate on its own (all 1,000, no cap):
  wall time of each, simulations run, candidates the cheap checks ruled out.
* ``converge-1000-nodes``: `karpy simulate --disruption`'s replay until no command is left:
  rounds, nodes removed and launched, hourly cost before and after, and the cost `karpy
  simulate` gives for the remaining pods on an empty cluster (and its lower bound).

Wall and CPU time (the process's, steadier on a shared machine) are reported with the load
average.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from karpy.apis.v1 import validate_nodepool
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.controllers.disruption.consolidation import (
    consolidation_candidates,
    multi_node,
    single_node,
)
from karpy.scheduling import format_resources
from karpy.scheduling.engine import NodePoolTemplate
from karpy.simulation.disruption import Replay, plan_disruption

JSON = dict[str, Any]
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
FAMILIES = ("c", "s", "m")
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d")
CPU = ("250m", "500m", "750m")
MEMORY = ("256Mi", "512Mi", "1Gi")


def nodepool() -> JSON:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                    ],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
                "budgets": [{"nodes": "10%"}],
            },
        },
    }


def cluster(
    nodes: int = 1000, pods_per_node: int = 10, keep: float = 0.5, seed: int = 13
) -> tuple[list[JSON], list[JSON]]:
    """(nodes, bound pods): every node full of pods, then `1 - keep` of the pods deleted."""
    rng = random.Random(seed)
    types = {t.name: t for t in kwok_instance_types()}
    node_objs: list[JSON] = []
    pods: list[JSON] = []
    deployments = 100
    for i in range(nodes):
        family = FAMILIES[i % len(FAMILIES)]
        it = types[f"{family}-8x-amd64-linux"]
        name = f"node-{i:04d}"
        labels = {
            **it.requirements.labels(),
            "karpenter.sh/nodepool": "default",
            "node.kubernetes.io/instance-type": it.name,
            "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
            "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/hostname": name,
        }
        node_objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {},
                "status": {
                    "capacity": format_resources(it.capacity),
                    "allocatable": format_resources(it.allocatable),
                },
            }
        )
        for j in range(pods_per_node):
            n = i * pods_per_node + j
            dep = n % deployments
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"dep-{dep:03d}-{n:05d}",
                        "namespace": "default",
                        "uid": f"uid-{n}",
                        "labels": {"app": f"dep-{dep:03d}"},
                        "ownerReferences": [
                            {"kind": "ReplicaSet", "name": f"dep-{dep:03d}", "controller": True}
                        ],
                    },
                    "spec": {
                        "nodeName": name,
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.k8s.io/pause:3.10",
                                "resources": {
                                    "requests": {
                                        "cpu": CPU[dep % len(CPU)],
                                        "memory": MEMORY[(dep // 3) % len(MEMORY)],
                                    }
                                },
                            }
                        ],
                    },
                    "status": {"phase": "Running"},
                }
            )
    kept = [p for p in pods if rng.random() < keep]
    return node_objs, kept


def replay(nodes: list[JSON], pods: list[JSON]) -> Replay:
    pool = validate_nodepool(nodepool())
    template = NodePoolTemplate.from_nodepool(pool.to_dict(), kwok_instance_types())
    return Replay(
        nodepools=[pool],
        templates=[template],
        nodes=nodes,
        nodeclaims=[],
        pods=pods,
        now=NOW,
    )


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def decision_case() -> JSON:
    nodes, pods = cluster()
    r = replay(nodes, pods)
    started = time.perf_counter()
    cpu = time.process_time()
    snapshot = r.snapshot()
    candidates, _ = consolidation_candidates(snapshot)
    prepared = time.perf_counter() - started
    multi, mstats = multi_node(snapshot, candidates)
    _, fstats = single_node(snapshot, candidates)
    decision_seconds = time.perf_counter() - started
    decision_cpu = time.process_time() - cpu
    cpu = time.process_time()
    every, estats = single_node(snapshot, candidates, first=False)
    every_cpu = time.process_time() - cpu
    return {
        "case": "decision-1000-nodes",
        "nodes": len(nodes),
        "pods": len(pods),
        "candidates": len(candidates),
        "snapshot_seconds": round(prepared, 3),
        "multi_node_seconds": round(mstats.seconds, 3),
        "multi_node_simulations": mstats.simulations,
        "multi_node_nodes": len(multi.candidates) if multi else 0,
        "multi_node_decision": multi.kind if multi else None,
        "multi_node_saving": round(multi.savings, 4) if multi else 0.0,
        "single_node_first_seconds": round(fstats.seconds, 3),
        "decision_seconds": round(decision_seconds, 3),
        "decision_cpu_seconds": round(decision_cpu, 3),
        "every_candidate_seconds": round(estats.seconds, 3),
        "every_candidate_cpu_seconds": round(every_cpu, 3),
        "every_candidate_evaluated": estats.considered,
        "every_candidate_simulations": estats.simulations,
        "every_candidate_pruned": estats.pruned,
        "every_candidate_consolidatable": len(every),
        "timed_out": mstats.timed_out or estats.timed_out,
        "loadavg": _load(),
    }


def converge_case() -> JSON:
    nodes, pods = cluster()
    started = time.perf_counter()
    cpu = time.process_time()
    plan = plan_disruption(replay(nodes, pods))
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu
    removed = sum(len(s.nodes) for s in plan.steps)
    launched = sum(1 for s in plan.steps if s.replacement is not None)
    return {
        "case": "converge-1000-nodes",
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu_seconds, 3),
        "rounds": len(plan.steps),
        "converged": plan.converged,
        "nodes_before": plan.nodes_before,
        "nodes_after": plan.nodes_after,
        "nodes_removed": removed,
        "replacements": launched,
        "cost_before": round(plan.cost_before, 4),
        "cost_after": round(plan.cost_after, 4),
        "simulate_cost": round(plan.fresh_cost, 4),
        "lower_bound": round(plan.lower_bound, 4),
        "ratio_to_simulate": round(plan.cost_after / plan.fresh_cost, 4)
        if plan.fresh_cost
        else None,
        "loadavg": _load(),
    }


def cases() -> Iterator[JSON]:
    yield decision_case()
    yield converge_case()
