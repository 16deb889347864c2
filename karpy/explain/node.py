"""`karpy explain node NAME` (a Node or NodeClaim name): for each disruption method whether the
node is a candidate or its first blocker, its expiry, its drift and a disruption under way.

The verdicts are `blockers.node_verdicts`, the controller's own; when consolidation may take the
node, the single-node search the controller runs is run on the cluster as read, and what it
finds (a command, or `no-cheaper-replacement`/`spot-to-spot`) is its answer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from karpy.apis.duration import DurationError, parse_duration
from karpy.apis.objects import get_condition, parse_time
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE
from karpy.controllers.disruption.blockers import CONSOLIDATION, node_verdicts
from karpy.controllers.disruption.consolidation import consolidation_candidates, node_price
from karpy.controllers.disruption.consolidation.search import single_node
from karpy.explain.cluster import ClusterView
from karpy.simulation.disruption import Replay
from karpy.state import StateNode

__all__ = ["explain_node"]

JSON = dict[str, Any]


def _search(view: ClusterView, node: StateNode) -> tuple[dict[str, str], JSON | None, float | None]:
    """The single-node search on the cluster as read: node key -> blocker word, the command it
    would start (if any) and the node's price."""
    objects = view.objects()
    replay = Replay(
        nodepools=objects.nodepools,
        templates=objects.templates,
        nodes=objects.nodes,
        nodeclaims=objects.nodeclaims,
        pods=objects.pods,
        pdbs=objects.pdbs,
        daemonsets=objects.daemonsets,
        namespaces=objects.namespaces,
        configs=objects.configs,
        nodeclasses=objects.nodeclasses,
        overlays=objects.overlays,
        buffers=objects.buffers,
        pod_templates=objects.pod_templates,
        limit_ranges=objects.limit_ranges,
        now=view.now,
    )
    snapshot = replay.snapshot()
    found, _ = consolidation_candidates(snapshot)
    mine = [c for c in found if c.key == node.key]
    own = next((n for n in snapshot.nodes if n.key == node.key), None)
    price = node_price(own, snapshot.templates.get(own.nodepool or "")) if own else None
    if not mine:
        return {}, None, price
    decisions, stats = single_node(snapshot, mine)
    command = None
    if decisions:
        d = decisions[0]
        command = {
            "decision": d.kind,
            "savingsPerHour": round(d.savings, 6),
            "replacementPricePerHour": round(d.replacement_price, 6),
            "replacementTypes": (
                [t.name for t in d.replacement.instance_types[:5]] if d.replacement else []
            ),
        }
    return dict(stats.blockers), command, price


def _expiry(node: StateNode) -> str | None:
    claim = node.nodeclaim or {}
    raw = (claim.get("spec") or {}).get("expireAfter")
    created = parse_time((claim.get("metadata") or {}).get("creationTimestamp"))
    if not raw or raw == "Never" or created is None:
        return None
    try:
        after: timedelta = parse_duration(str(raw))
    except DurationError:
        return None
    return (created + after).strftime("%Y-%m-%dT%H:%M:%SZ")


def explain_node(view: ClusterView, node: StateNode) -> JSON:
    """The answer for one node, as plain data (the JSON/YAML output; the table reads it)."""
    verdicts = node_verdicts(
        node, nodepools=view.nodepools, pdbs=view.pdbs, now=view.now, budgets=view.budgets
    )
    out: JSON = {
        "node": node.node_name,
        "nodeClaim": node.nodeclaim_name,
        "nodePool": node.nodepool,
        "instanceType": node.labels.get(LABEL_INSTANCE_TYPE),
        "zone": node.labels.get(LABEL_TOPOLOGY_ZONE),
        "capacityType": node.labels.get(LABEL_CAPACITY_TYPE),
    }
    if any(v.method == CONSOLIDATION and v.candidate for v in verdicts):
        searched, command, price = _search(view, node)
        out["pricePerHour"] = price
        if searched:
            verdicts = node_verdicts(
                node,
                nodepools=view.nodepools,
                pdbs=view.pdbs,
                now=view.now,
                budgets=view.budgets,
                searched=searched,
            )
        if command is not None:
            out["consolidation"] = command
    out["methods"] = [v.to_dict() for v in verdicts]
    out["expiresAt"] = _expiry(node)
    drifted = get_condition(node.nodeclaim, cond.NODECLAIM_DRIFTED)
    out["drift"] = (
        {"drifted": True, "reason": drifted.get("reason"), "message": drifted.get("message")}
        if drifted is not None and drifted.get("status") == cond.STATUS_TRUE
        else {"drifted": False}
    )
    disrupting = get_condition(node.nodeclaim, cond.NODECLAIM_DISRUPTION_REASON)
    if disrupting is not None:
        out["disruption"] = {
            "reason": disrupting.get("reason"),
            "message": disrupting.get("message"),
        }
    return out
