"""`karpy explain pod NAME -n NS`.

Pending: the provisioner's input for the cluster's pending pods, built with the builder
`karpy run` and `karpy simulate` use; for each NodePool the first reason it cannot take the
pod and the fix (`engine.misfit`, in the scheduler's order), a SchedulingConfig that rules the
NodePool out (`schedulingconfig`, from the builder's `Explainer`), and what the scheduler
itself found for that NodePool when those checks pass (topology spread or pod affinity:
`SchedulingResult.pool_errors`); then the scheduler's own verdict on the whole batch (the
NodeClaim it would launch for the pod, or its error). Bound: its node, NodeClaim, NodePool and
offering with its price, and the plan that launched the NodeClaim as the provisioner recorded
it (`karpy.sh/provisioning-plan`: batch, proven optimal or its gap, the alternatives priced)."""

from __future__ import annotations

import json
from typing import Any

from karpy.apis.objects import get_condition
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE
from karpy.controllers.disruption.consolidation import node_price
from karpy.controllers.disruption.orchestration.marks import ANNOTATION_REPLACEMENT_FOR, annotation
from karpy.controllers.provisioning.nodeclaims import ANNOTATION_PLAN
from karpy.explain.cluster import ClusterView
from karpy.scheduling.engine import schedule
from karpy.scheduling.engine.misfit import Misfit, from_scheduler, misfit
from karpy.simulation.live import pending_plan_input
from karpy.state import pods as podutil
from karpy.state.inputs.builder import nodepool_usage
from karpy.state.inputs.configs import Ruling

__all__ = ["explain_pod"]


def _row(pool: str, reason: str, obj: str, detail: str, fix: str) -> JSON:
    return {
        "nodePool": pool,
        "fits": False,
        "reason": reason,
        "object": obj,
        "detail": detail,
        "fix": fix,
    }


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


JSON = dict[str, Any]


def _bound(view: ClusterView, pod: JSON, node_name: str) -> JSON:
    node = view.node(node_name)
    out: JSON = {"state": "bound", "node": node_name}
    if node is None or not node.managed:
        out["note"] = "the node is not one karpy or Karpenter launched"
        return out
    templates = {t.name: t for t in view.objects().templates}
    price = node_price(node, templates.get(node.nodepool or ""))
    out.update(
        nodeClaim=node.nodeclaim_name,
        nodePool=node.nodepool,
        offering={
            "instanceType": node.labels.get(LABEL_INSTANCE_TYPE),
            "zone": node.labels.get(LABEL_TOPOLOGY_ZONE),
            "capacityType": node.labels.get(LABEL_CAPACITY_TYPE),
            "pricePerHour": price,
        },
    )
    plan = _plan(node.nodeclaim)
    if plan is not None:
        out["plan"] = plan
    elif annotation(node.nodeclaim, ANNOTATION_REPLACEMENT_FOR):
        out["note"] = "a disruption command launched its node to replace others"
    return out


def _plan(claim: JSON | None) -> JSON | None:
    """The plan that launched the NodeClaim, as the provisioner recorded it: its batch, whether
    it was proven optimal, and the alternatives it priced (the first is the cheapest
    compatible offering, the one the NodeClaim asks for first)."""
    raw = annotation(claim, ANNOTATION_PLAN)
    if raw is None:
        return None
    try:
        plan = json.loads(raw)
    except ValueError:
        return {"error": f"unreadable {ANNOTATION_PLAN} annotation"}
    if not isinstance(plan, dict):
        return {"error": f"unreadable {ANNOTATION_PLAN} annotation"}
    alternatives = [
        {"instanceType": o[0], "zone": o[1], "capacityType": o[2], "pricePerHour": o[3]}
        for o in plan.pop("options", None) or ()
        if isinstance(o, list) and len(o) == 4
    ]
    plan["provenOptimal"] = bool(plan.pop("optimal", False))
    plan["instanceTypes"] = plan.pop("types", len(alternatives))
    plan["alternatives"] = alternatives
    return plan


def _pending(view: ClusterView, pod: JSON, key: str) -> JSON:
    out: JSON = {"state": "pending"}
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if nominated:
        out["nominatedNode"] = nominated
    if not podutil.is_provisionable(pod):
        out["note"] = "kube-scheduler has not marked it unschedulable: it may still place it"
    built = pending_plan_input(view.objects())
    if key in built.errors:
        out["inputError"] = built.errors[key]
    found = next((p for p in built.input.pods if p.key == key), None)
    usage = built.input.pool_usage or nodepool_usage(view.nodes)
    result = schedule(built.input) if found is not None else None
    pools: list[JSON] = []
    templates = {t.name: t for t in built.input.templates}
    rulings = built.explainer.rulings(found) if built.explainer and found else {}
    for name in sorted(view.nodepools):
        if found is None or result is None:
            break
        raw = next((r for r in view.listed["nodepools"] if _name(r) == name), {})
        if view.nodepools[name].is_static:
            pools.append(
                _row(
                    name,
                    "static-nodepool",
                    f"NodePool/{name}",
                    "a static NodePool launches no nodes for pods",
                    "use a dynamic NodePool",
                )
            )
            continue
        ruled = rulings.get(name)
        if ruled and ruled[0].left_out:
            pools.append(_config_row(ruled[0], fix="make the SchedulingConfig and NodePool agree"))
            continue
        waiting = get_condition(raw, cond.NODEPOOL_NODECLASS_READY)
        template = templates.get(name)
        if template is None or (waiting is not None and waiting.get("status") == cond.STATUS_FALSE):
            spec = ((raw.get("spec") or {}).get("template") or {}).get("spec") or {}
            ref = spec.get("nodeClassRef") or {}
            detail = (waiting or {}).get("message") or "the provisioner leaves it out"
            pools.append(
                _row(
                    name,
                    "nodeclass-not-ready",
                    f"{ref.get('kind', 'NodeClass')}/{ref.get('name', '')}",
                    str(detail),
                    "make the NodeClass Ready (see its status conditions)",
                )
            )
            continue
        why = misfit(found, template, usage=usage.get(name, {}))
        if ruled and (why is None or why.reason in ("requirement", "volume-zone")):
            fix = f"let SchedulingConfig {ruled[0].config} allow what the pod asks"
            pools.append(_config_row(ruled[0], fix=fix))
            continue
        if why is None:
            said = result.pool_errors.get(key, {}).get(name)
            if said is not None:
                why = from_scheduler(said) or Misfit(
                    "scheduler", f"NodePool/{name}", said, "see the scheduler's message"
                )
        pools.append({"nodePool": name, "fits": why is None, **(why.to_dict() if why else {})})
    out["nodePools"] = pools
    if result is not None:
        errors = built.explain(result.errors)
        if key in errors:
            out["scheduler"] = {"error": errors[key]}
        else:
            claim = next((c for c in result.node_claims if any(p.key == key for p in c.pods)), None)
            if claim is not None:
                out["scheduler"] = {
                    "nodePool": claim.nodepool,
                    "instanceTypes": [t.name for t in claim.instance_types[:5]],
                    "pricePerHour": claim.price,
                }
            else:
                node = next(
                    (n for n, ps in result.existing.items() if any(p.key == key for p in ps)), None
                )
                out["scheduler"] = {"existingNode": node}
    return out


def _config_row(ruling: Ruling, *, fix: str) -> JSON:
    return _row(
        ruling.nodepool,
        "schedulingconfig",
        f"SchedulingConfig/{ruling.config}",
        ruling.message(),
        fix,
    )


def explain_pod(view: ClusterView, pod: JSON) -> JSON:
    key = podutil.pod_key(pod)
    out: JSON = {"pod": key}
    bound = podutil.node_name(pod)
    out.update(_bound(view, pod, bound) if bound else _pending(view, pod, key))
    return out
