"""`karpy explain node NAME` (a Node or NodeClaim name): for each disruption method whether the
node is a candidate or its first blocker, its expiry, its drift and a disruption under way: the
command that disrupts it (method, reason, replacements, savings), from what the orchestration
queue persists on its NodeClaim, for as long as the NodeClaim exists.

The verdicts are `blockers.node_verdicts`, the controller's own; when consolidation may take the
node, the single-node search the controller runs is run on the cluster as read, and what it
finds (a command, or `no-cheaper-replacement`/`spot-to-spot`) is its answer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from karpy.apis.duration import DurationError, parse_duration
from karpy.apis.objects import get_condition, is_condition_true, parse_time
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.controllers.disruption.blockers import CONSOLIDATION, node_verdicts
from karpy.controllers.disruption.consolidation import consolidation_candidates, node_price
from karpy.controllers.disruption.consolidation.search import single_node
from karpy.controllers.disruption.orchestration.marks import (
    ANNOTATION_COMMAND,
    ANNOTATION_METHOD,
    ANNOTATION_REPLACEMENT_FOR,
    ANNOTATION_REPLACEMENTS,
    ANNOTATION_SAVINGS,
    ANNOTATION_STARTED,
    annotation,
)
from karpy.controllers.metrics.cost import claim_price
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
    command = _command(view, node)
    if command is not None:
        out["command"] = command
    return out


def _command(view: ClusterView, node: StateNode) -> JSON | None:
    """The disruption command under way on the node, as the orchestration queue persisted it
    on the NodeClaim: method, reason, when it started, the savings it expects and each
    replacement NodeClaim it launched (type, zone, capacity type and price once launched, the
    types it may launch as before)."""
    claim = node.nodeclaim or {}
    command_id = annotation(claim, ANNOTATION_COMMAND)
    if command_id is None:
        return None
    reason = get_condition(claim, cond.NODECLAIM_DISRUPTION_REASON)
    savings = annotation(claim, ANNOTATION_SAVINGS)
    out: JSON = {
        "id": command_id,
        "method": annotation(claim, ANNOTATION_METHOD),
        "reason": (reason or {}).get("reason"),
        "started": annotation(claim, ANNOTATION_STARTED),
        "savingsPerHour": float(savings) if savings else None,
    }
    promised = annotation(claim, ANNOTATION_REPLACEMENTS)
    out["decision"] = "replace" if promised not in (None, "0") else "delete"
    types = {t.name: t.instance_types for t in view.objects().templates}
    replacements = []
    for other in view.listed["nodeclaims"]:
        if annotation(other, ANNOTATION_REPLACEMENT_FOR) != command_id:
            continue
        labels = (other.get("metadata") or {}).get("labels") or {}
        launched = labels.get(LABEL_INSTANCE_TYPE)
        entry: JSON = {"nodeClaim": (other.get("metadata") or {}).get("name")}
        if launched:
            entry.update(
                instanceType=launched,
                zone=labels.get(LABEL_TOPOLOGY_ZONE),
                capacityType=labels.get(LABEL_CAPACITY_TYPE),
                pricePerHour=claim_price(other, types.get(labels.get(LABEL_NODEPOOL, ""), ())),
            )
        else:
            entry["instanceTypes"] = _allowed_types(other)[:5]
        entry["initialized"] = is_condition_true(other, cond.NODECLAIM_INITIALIZED)
        replacements.append(entry)
    out["replacements"] = replacements
    if promised and promised.isdigit() and int(promised) > len(replacements):
        out["replacementsMissing"] = int(promised) - len(replacements)
    return out


def _allowed_types(claim: JSON) -> list[str]:
    for req in (claim.get("spec") or {}).get("requirements") or ():
        if req.get("key") == LABEL_INSTANCE_TYPE and req.get("operator") == "In":
            return [str(v) for v in req.get("values") or ()]
    return []
