"""`karpy explain nodepool NAME`: its budgets now (allowed disruptions per reason, and when a
cron window next changes them, as `status.disruption.budgets`), each scheduled budget's window
(open now or next, with its open and close times), limits against usage, cost per hour of its
nodes, drifted nodes, and its nodes blocked per reason and method (the
`karpy_disruption_blocked_nodes` series of this NodePool)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from karpy.apis.objects import is_condition_true
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.controllers.disruption.blockers import node_verdicts
from karpy.controllers.disruption.budgets import next_change, shown
from karpy.controllers.disruption.consolidation import node_price
from karpy.explain.cluster import ClusterView
from karpy.scheduling import format_resources
from karpy.state.inputs.builder import nodepool_usage

__all__ = ["explain_nodepool"]

JSON = dict[str, Any]


def _time(at: datetime | None) -> str | None:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else None


def _windows(pool: NodePool, now: datetime) -> list[JSON]:
    """Each scheduled budget: its window open now, or the next one (a window that hits keep
    open has no close time)."""
    out: list[JSON] = []
    for budget in pool.spec.disruption.budgets:
        if budget.schedule is None:
            continue
        entry: JSON = {
            "nodes": budget.nodes,
            "reasons": list(budget.reasons) if budget.reasons else ["all"],
            "schedule": budget.schedule,
            "duration": budget.duration,
        }
        try:
            window = budget.window(now)
        except (ValueError, KeyError) as err:
            entry["error"] = f"the schedule does not parse ({err}): the budget allows nothing"
            out.append(entry)
            continue
        if window is not None:
            opens, closes = window
            entry["open"] = opens <= now
            entry["opensAt"] = _time(opens)
            entry["closesAt"] = _time(closes)
        out.append(entry)
    return out


def explain_nodepool(view: ClusterView, pool: NodePool) -> JSON:
    nodes = [n for n in view.nodes if n.nodepool == pool.name and n.managed]
    budgets: dict[str, JSON] = {}
    for reason, states in view.budgets.items():
        state = states.get(pool.name)
        if state is not None:
            budgets[reason] = {
                "allowed": shown(state.allowed, state.nodes),
                "disrupting": state.disrupting,
                "remaining": state.remaining,
                "nodes": state.nodes,
            }
            change = next_change(pool, reason=reason, now=view.now, num_nodes=state.nodes)
            if change is not None:
                budgets[reason]["nextChangeAt"] = _time(change.at)
                budgets[reason]["allowedAfterChange"] = shown(change.allowed, state.nodes)
    blocked: dict[str, dict[str, int]] = {}
    for node in nodes:
        for v in node_verdicts(
            node, nodepools=view.nodepools, pdbs=view.pdbs, now=view.now, budgets=view.budgets
        ):
            if v.blocker is not None:
                per = blocked.setdefault(v.blocker.reason, {})
                per[v.method] = per.get(v.method, 0) + 1
    templates = {t.name: t for t in view.objects().templates}
    prices = [node_price(n, templates.get(pool.name)) for n in nodes]
    usage = nodepool_usage(nodes).get(pool.name, {})
    limits = pool.to_dict().get("spec", {}).get("limits") or {}
    return {
        "nodePool": pool.name,
        "nodes": len(nodes),
        "budgets": budgets,
        "windows": _windows(pool, view.now),
        "limits": limits,
        "usage": {k: str(v) for k, v in format_resources(usage).items()},
        "costPerHour": round(sum(p for p in prices if p is not None), 6),
        "unpricedNodes": sum(1 for p in prices if p is None),
        "drifted": sorted(
            n.name for n in nodes if is_condition_true(n.nodeclaim, cond.NODECLAIM_DRIFTED)
        ),
        "blocked": blocked,
    }
