"""An independent feasibility checker for scheduling plans.

It re-reads the raw pod dicts and judges the plan by concrete node labels, without the engine's
requirement algebra, topology groups or packer: every listed instance type must hold its pods
plus the DaemonSets that would run there, taints must be tolerated, node selectors and required
node affinity must match, required pod (anti-)affinity and DoNotSchedule spreads must hold in
the final placement, host ports must not collide, and limits must not be exceeded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from karpy.scheduling.engine.model import NodePoolTemplate, SchedulingInput, SchedulingResult
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.quantity import milli_value, value

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def requests(raw: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for c in raw["spec"].get("containers", []):
        for k, v in (c.get("resources", {}).get("requests") or {}).items():
            out[k] += milli_value(v) if k == "cpu" else value(v)
    out["pods"] += 1
    return dict(out)


def expr_ok(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, vals = expr["key"], expr["operator"], list(expr.get("values") or [])
    have = labels.get(key)
    if op == "In":
        return have in vals
    if op == "NotIn":
        return have not in vals
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    try:
        n, bound = int(have or ""), int(vals[0])
    except ValueError:
        return False
    return n > bound if op == "Gt" else n < bound


def selector_ok(sel: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if sel is None:
        return False
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    return all(expr_ok(e, labels) for e in sel.get("matchExpressions") or [])


def node_affinity_ok(raw: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    spec = raw["spec"]
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        (spec.get("affinity") or {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if not required:
        return True
    return any(
        all(expr_ok(e, labels) for e in term.get("matchExpressions") or [])
        for term in required["nodeSelectorTerms"]
    )


def tolerates(raw: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    for t in raw["spec"].get("tolerations") or []:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def type_labels(it: InstanceType) -> dict[str, str]:
    out = {}
    for key, r in it.requirements.items():
        if not r.complement and len(r.values) == 1:
            out[key] = next(iter(r.values))
    return out


def daemon_overhead(
    daemons: Sequence[Mapping[str, Any]], tmpl: NodePoolTemplate, labels: Mapping[str, str]
) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for d in daemons:
        if not all(tolerates(d, t.to_dict()) for t in tmpl.taints):
            continue
        if not node_affinity_ok(d, labels):
            continue
        for k, v in requests(d).items():
            out[k] += v
    return out


def check_plan(
    inp: SchedulingInput,
    raw_pods: Sequence[Mapping[str, Any]],
    result: SchedulingResult,
    *,
    raw_daemons: Sequence[Mapping[str, Any]] = (),
) -> None:
    by_key = {
        f"{p['metadata'].get('namespace', 'default')}/{p['metadata']['name']}": p for p in raw_pods
    }
    templates = {t.name: t for t in inp.templates}
    # every pod accounted for exactly once
    seen: dict[str, str] = {}
    placement: dict[str, tuple[str, dict[str, str]]] = {}
    for i, claim in enumerate(result.node_claims):
        tmpl = templates[claim.nodepool]
        assert claim.instance_types, f"claim {i} lists no instance type"
        assert len(claim.instance_types) <= inp.max_instance_types
        first = claim.instance_types[0]
        assert claim.offering is not None and claim.offering in first.offerings
        assert claim.offering.available
        # the launched offering is the cheapest available one the claim allows
        zones = claim.requirements.get(ZONE)
        cts = claim.requirements.get("karpenter.sh/capacity-type")
        allowed = [
            o
            for o in first.offerings
            if o.available
            and (zones is None or zones.has(o.zone))
            and (cts is None or cts.has(o.capacity_type))
        ]
        assert claim.offering.price == min(o.price for o in allowed)
        node_name = f"claim-{i}"
        total: dict[str, int] = defaultdict(int)
        for p in claim.pods:
            for k, v in requests(by_key[p.key]).items():
                total[k] += v
        for it in claim.instance_types:
            labels = {
                **tmpl.labels,
                **type_labels(it),
                "karpenter.sh/nodepool": tmpl.name,
                ZONE: claim.offering.zone,
                "karpenter.sh/capacity-type": claim.offering.capacity_type,
                HOSTNAME: node_name,
            }
            overhead = daemon_overhead(raw_daemons, tmpl, labels)
            for k, v in total.items():
                assert v + overhead.get(k, 0) <= it.allocatable.get(k, 0), (
                    f"{it.name} cannot hold {k}={v}+{overhead.get(k, 0)} on claim {i}"
                )
            for p in claim.pods:
                raw = by_key[p.key]
                assert node_affinity_ok(raw, labels), f"{p.key} selector/affinity vs {it.name}"
        labels = {
            **tmpl.labels,
            **type_labels(first),
            "karpenter.sh/nodepool": tmpl.name,
            ZONE: claim.offering.zone,
            "karpenter.sh/capacity-type": claim.offering.capacity_type,
            HOSTNAME: node_name,
        }
        for p in claim.pods:
            raw = by_key[p.key]
            for t in tmpl.taints:
                assert tolerates(raw, t.to_dict()) or t.effect == "PreferNoSchedule", (
                    f"{p.key} does not tolerate {t}"
                )
            assert p.key not in seen, f"{p.key} placed twice"
            seen[p.key] = node_name
            placement[p.key] = (node_name, labels)
    existing = {n.name: n for n in inp.existing_nodes}
    for name, placed in result.existing.items():
        n = existing[name]
        labels = {HOSTNAME: name, **n.labels}
        total = defaultdict(int)
        for p in list(n.pods) + list(placed):
            for k, v in p.requests.items():
                total[k] += v
        for k, v in total.items():
            assert v <= n.allocatable.get(k, 0), f"existing node {name} overcommitted on {k}"
        for p in placed:
            raw = by_key[p.key]
            assert node_affinity_ok(raw, labels)
            for t in n.taints:
                assert tolerates(raw, t.to_dict()), f"{p.key} does not tolerate {t} on {name}"
            assert p.key not in seen, f"{p.key} placed twice"
            seen[p.key] = name
            placement[p.key] = (name, labels)
    for key in by_key:
        assert (key in seen) != (key in result.errors), f"{key}: placed and failed, or neither"
    # bound pods of existing nodes take part in topology
    everyone: dict[str, tuple[Mapping[str, Any], str, dict[str, str]]] = {}
    for key, (node_name, labels) in placement.items():
        everyone[key] = (by_key[key], node_name, labels)
    for n in inp.existing_nodes:
        for p in n.pods:
            everyone[p.key] = (
                {"metadata": {"labels": p.labels, "namespace": p.namespace}, "spec": {}},
                n.name,
                {HOSTNAME: n.name, **n.labels},
            )
    zones = sorted(
        {
            o.zone
            for t in inp.templates
            for it in t.instance_types
            for o in it.offerings
            if o.available and (ZONE not in t.requirements or t.requirements[ZONE].has(o.zone))
        }
        | {n.labels[ZONE] for n in inp.existing_nodes if ZONE in n.labels}
    )
    _check_topology(placement, by_key, everyone, zones)
    _check_ports(placement, by_key)
    _check_limits(inp, result)


def _matching(
    everyone: Mapping[str, tuple[Mapping[str, Any], str, dict[str, str]]],
    selector: Mapping[str, Any],
    namespace: str,
) -> list[tuple[str, dict[str, str]]]:
    out = []
    for raw, node_name, labels in everyone.values():
        meta = raw["metadata"]
        if meta.get("namespace", "default") != namespace:
            continue
        if selector_ok(selector, meta.get("labels") or {}):
            out.append((node_name, labels))
    return out


def _check_topology(
    placement: Mapping[str, tuple[str, dict[str, str]]],
    by_key: Mapping[str, Mapping[str, Any]],
    everyone: Mapping[str, tuple[Mapping[str, Any], str, dict[str, str]]],
    zones: Sequence[str],
) -> None:
    for key, (_node, labels) in placement.items():
        raw = by_key[key]
        ns = raw["metadata"].get("namespace", "default")
        aff = raw["spec"].get("affinity") or {}
        for term in (aff.get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", []
        ):
            tk = term["topologyKey"]
            others = [
                other
                for other_key, (oraw, _n, olabels) in everyone.items()
                if other_key != key
                and oraw["metadata"].get("namespace", "default") == ns
                and selector_ok(term["labelSelector"], oraw["metadata"].get("labels") or {})
                and olabels.get(tk) is not None
                and olabels.get(tk) == labels.get(tk)
                for other in [other_key]
            ]
            assert not others, f"{key} anti-affinity on {tk} violated by {others[:3]}"
        for term in (aff.get("podAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", []
        ):
            tk = term["topologyKey"]
            here = [
                1
                for n, lab in _matching(everyone, term["labelSelector"], ns)
                if lab.get(tk) == labels.get(tk)
            ]
            assert here, f"{key} affinity on {tk} has no matching pod in its domain"
        for c in raw["spec"].get("topologySpreadConstraints") or []:
            if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
                continue
            tk = c["topologyKey"]
            counts: dict[str, int] = defaultdict(int)
            for _n, lab in _matching(everyone, c["labelSelector"], ns):
                if lab.get(tk) is not None:
                    counts[lab[tk]] += 1
            mine = counts.get(labels.get(tk, ""), 0)
            if tk == HOSTNAME:
                # a fresh node is always an empty domain
                assert mine <= c["maxSkew"], f"{key} hostname spread: {mine} on its node"
            else:
                domains = (
                    [z for z in zones if node_affinity_ok(raw, {**labels, ZONE: z})]
                    if tk == ZONE
                    else list(counts)
                )
                low = min((counts.get(d, 0) for d in domains), default=0)
                assert mine - low <= c["maxSkew"], f"{key} spread on {tk}: {dict(counts)}"


def _check_ports(
    placement: Mapping[str, tuple[str, dict[str, str]]], by_key: Mapping[str, Mapping[str, Any]]
) -> None:
    used: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for key, (node_name, _labels) in placement.items():
        for c in by_key[key]["spec"].get("containers", []):
            for port in c.get("ports") or []:
                if port.get("hostPort"):
                    entry = (port.get("protocol", "TCP"), port["hostPort"])
                    assert entry not in used[node_name], f"{key} host port clash on {node_name}"
                    used[node_name].add(entry)


def _check_limits(inp: SchedulingInput, result: SchedulingResult) -> None:
    for tmpl in inp.templates:
        if not tmpl.limits:
            continue
        claims = [c for c in result.node_claims if c.nodepool == tmpl.name]
        for resource, limit in tmpl.limits.items():
            if resource == "nodes":
                assert len(claims) <= limit
                continue
            worst = sum(max(t.capacity.get(resource, 0) for t in c.instance_types) for c in claims)
            assert worst <= limit, f"nodepool {tmpl.name} may exceed its {resource} limit"
