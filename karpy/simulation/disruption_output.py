"""Rendering a disruption replay: JSON/YAML with a fixed schema (documented in the README), or
a table of the commands and a summary."""

from __future__ import annotations

import json
from typing import Any, TextIO

import yaml

from karpy.simulation.disruption import DisruptionPlan, NodeRef, Step

__all__ = ["disruption_document", "write_disruption"]


def _round(x: float) -> float:
    return round(x, 6)


def _node(ref: NodeRef) -> dict[str, Any]:
    return {
        "name": ref.name,
        "nodePool": ref.nodepool,
        "instanceType": ref.instance_type,
        "zone": ref.zone,
        "capacityType": ref.capacity_type,
        "price": _round(ref.price),
    }


def _step(step: Step) -> dict[str, Any]:
    return {
        "round": step.round,
        "method": step.method,
        "reason": step.reason,
        "decision": step.decision,
        "nodes": [_node(n) for n in step.nodes],
        "replacement": _node(step.replacement) if step.replacement else None,
        "replacementInstanceTypes": step.replacement_types,
        "podsMoved": len(step.moves),
        "moves": [{"pod": pod, "node": node} for pod, node in step.moves.items()],
        "budgets": [
            {"nodePool": pool, "nodes": taken, "allowed": allowed}
            for pool, (taken, allowed) in step.budgets.items()
        ],
        "saving": _round(step.saving),
    }


def disruption_document(plan: DisruptionPlan) -> dict[str, Any]:
    """The replay as the documented JSON object (keep these names: scripts rely on them)."""
    removed = sum(len(s.nodes) for s in plan.steps)
    return {
        "commands": [_step(s) for s in plan.steps],
        "summary": {
            "commands": len(plan.steps),
            "rounds": len({s.round for s in plan.steps}),
            "converged": plan.converged,
            "nodesBefore": plan.nodes_before,
            "nodesAfter": plan.nodes_after,
            "nodesRemoved": removed,
            "replacements": sum(1 for s in plan.steps if s.replacement is not None),
            "podsMoved": sum(len(s.moves) for s in plan.steps),
            "costBefore": _round(plan.cost_before),
            "costAfter": _round(plan.cost_after),
            "saving": _round(plan.saving),
            "simulateCost": _round(plan.fresh_cost),
            "lowerBound": _round(plan.lower_bound),
        },
        "blocked": [{"node": n, "reason": r} for n, r in sorted(plan.blocked.items())],
    }


def _table(plan: DisruptionPlan, out: TextIO) -> None:
    doc = disruption_document(plan)
    if not plan.steps:
        out.write("no disruption: every node is needed as it is\n")
    for i, step in enumerate(plan.steps, 1):
        nodes = ", ".join(
            f"{n.name} ({n.instance_type} {n.zone} {n.capacity_type})" for n in step.nodes
        )
        budgets = ", ".join(
            f"{pool} {taken}/{allowed}" for pool, (taken, allowed) in step.budgets.items()
        )
        if i == 1 or step.round != plan.steps[i - 2].round:
            out.write(f"round {step.round}:\n")
        out.write(f"{i}. {step.method}: {step.decision} {nodes}\n")
        if step.replacement is not None:
            r = step.replacement
            out.write(
                f"   replacement {r.instance_type} {r.zone} {r.capacity_type} "
                f"${r.price:.4f}/h (from {len(step.replacement_types)} types)\n"
            )
        out.write(
            f"   pods moved {len(step.moves)}, budget {step.reason} {budgets}, "
            f"saves ${step.saving:.4f}/h\n"
        )
    s = doc["summary"]
    out.write(
        f"\nnodes {s['nodesBefore']} -> {s['nodesAfter']} ({s['nodesRemoved']} removed, "
        f"{s['replacements']} replacements, {s['podsMoved']} pods moved"
        f"{'' if s['converged'] else ', stopped before converging'})\n"
        f"hourly cost ${s['costBefore']:.4f} -> ${s['costAfter']:.4f} "
        f"(saves ${s['saving']:.4f}/h)\n"
        f"karpy simulate of the same pods on an empty cluster: ${s['simulateCost']:.4f}/h; "
        f"lower bound of any placement: ${s['lowerBound']:.4f}/h\n"
    )
    for b in doc["blocked"]:
        out.write(f"kept {b['node']}: {b['reason']}\n")


def write_disruption(out: TextIO, plan: DisruptionPlan, fmt: str) -> None:
    if fmt == "json":
        json.dump(disruption_document(plan), out, indent=2)
        out.write("\n")
    elif fmt == "yaml":
        yaml.safe_dump(disruption_document(plan), out, sort_keys=False)
    else:
        _table(plan, out)
