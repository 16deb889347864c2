"""`karpy simulate --disruption`: what voluntary disruption would do to a cluster snapshot.

The scenario's nodes (with their labels and capacity), bound pods, NodePools and PDBs are
replayed through the disruption loop's methods in Karpenter's order, one pass per round as
the loop acts: emptiness (every empty node its budget allows), multi-node consolidation, then
single-node consolidation; the first method that finds anything gives the round's commands
(consolidation: the independent commands of one pass, `independent`, within the budgets all
together). Each command is applied to the snapshot (nodes removed, pods moved to where the
simulation put them, a replacement node added) and the next round starts from the result,
until no method finds anything (or `max_rounds`). Every command finishes before the next
round, so each round's budgets start with nothing disrupting.

Nodes with a `karpenter.sh/nodepool` label and no NodeClaim in the scenario get one made up:
launched, registered, initialized and `Consolidatable` (the snapshot is taken as settled). A
PDB without `status.disruptionsAllowed` gets it computed from its spec and the pods it
selects, all taken as healthy.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from karpy.apis.objects import is_condition_true
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_NODE_INITIALIZED,
    LABEL_NODE_REGISTERED,
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.controllers.disruption.candidates import NotCandidate, candidate
from karpy.controllers.disruption.consolidation import (
    REPLACEMENT,
    ConsolidationCandidate,
    Decision,
    Snapshot,
    budget_remaining,
    buffer_misses,
    build_snapshot,
    consolidation_candidates,
    node_price,
)
from karpy.controllers.disruption.consolidation.independent import (
    independent,
    multi_node_search,
    single_node_search,
)
from karpy.kube.memory import gc_paused
from karpy.scheduling import format_resources
from karpy.scheduling.engine import NodePoolTemplate, schedule
from karpy.scheduling.engine.model import PreferencePolicy
from karpy.scheduling.selectors import LabelSelector, SelectorError
from karpy.state import pods as podutil
from karpy.state.inputs import (
    ClusterObjects,
    NodeClassKey,
    PodViews,
    build_input,
    state_nodes,
)

__all__ = ["DisruptionPlan", "Step", "plan_disruption"]

JSON = dict[str, Any]
PROVIDER_PREFIX: Final = "karpy-simulate://"
METHOD_EMPTINESS: Final = "emptiness"
METHOD_MULTI: Final = "multi-node-consolidation"
METHOD_SINGLE: Final = "single-node-consolidation"
SETTLED: Final = "2000-01-01T00:00:00Z"


@dataclass(frozen=True)
class NodeRef:
    name: str
    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float


@dataclass(frozen=True)
class Step:
    """One command of the replay."""

    method: str
    reason: str
    decision: str
    """`delete` or `replace`."""
    nodes: list[NodeRef]
    replacement: NodeRef | None
    replacement_types: list[str]
    moves: dict[str, str]
    """Pod key -> node it moves to."""
    budgets: dict[str, tuple[int, int]]
    """NodePool -> (nodes this command takes, nodes its budget allowed this round)."""
    round: int = 1
    """The round (the loop's pass) the command was found in; commands of one round are
    independent and run together."""

    @property
    def saving(self) -> float:
        before = sum(n.price for n in self.nodes)
        return before - (self.replacement.price if self.replacement else 0.0)


@dataclass
class DisruptionPlan:
    steps: list[Step] = field(default_factory=list)
    cost_before: float = 0.0
    cost_after: float = 0.0
    nodes_before: int = 0
    nodes_after: int = 0
    fresh_cost: float = 0.0
    """What `karpy simulate` would launch for the cluster's pods on an empty cluster."""
    lower_bound: float = 0.0
    """A lower bound on the hourly cost of any placement of the cluster's pods."""
    converged: bool = True
    blocked: dict[str, str] = field(default_factory=dict)
    """Managed nodes consolidation may not take at the end, and why."""

    @property
    def saving(self) -> float:
        return self.cost_before - self.cost_after


def _meta(obj: Mapping[str, Any]) -> JSON:
    return dict(obj.get("metadata") or {})


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _settled_claim(node: Mapping[str, Any], provider_id: str) -> JSON:
    conditions = [
        {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": SETTLED}
        for t in ("Launched", "Registered", "Initialized", "Ready", cond.NODECLAIM_CONSOLIDATABLE)
    ]
    meta = _meta(node)
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": _name(node),
            "labels": dict(meta.get("labels") or {}),
            "creationTimestamp": meta.get("creationTimestamp") or SETTLED,
        },
        "spec": {},
        "status": {
            "providerID": provider_id,
            "capacity": dict((node.get("status") or {}).get("capacity") or {}),
            "allocatable": dict((node.get("status") or {}).get("allocatable") or {}),
            "conditions": conditions,
        },
    }


def _managed_node(node: Mapping[str, Any], provider_id: str) -> JSON:
    out = copy.deepcopy(dict(node))
    meta = out.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    labels.setdefault(LABEL_NODE_REGISTERED, "true")
    labels.setdefault(LABEL_NODE_INITIALIZED, "true")
    out.setdefault("spec", {})["providerID"] = provider_id
    status = out.setdefault("status", {})
    status.setdefault("conditions", [{"type": "Ready", "status": "True"}])
    return out


def _scaled(value: Any, total: int) -> int | None:
    if value is None:
        return None
    text = str(value)
    if text.endswith("%"):
        try:
            return math.ceil(total * float(text[:-1]) / 100.0)
        except ValueError:
            return None
    try:
        return int(text)
    except ValueError:
        return None


def pdb_with_status(pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> JSON:
    """The PDB with `status.disruptionsAllowed` (kept if given; else from its spec and the
    active pods it selects, all taken as healthy)."""
    out = dict(pdb)
    status = dict(out.get("status") or {})
    if status.get("disruptionsAllowed") is not None:
        return out
    spec = out.get("spec") or {}
    namespace = str(_meta(out).get("namespace") or "default")
    try:
        selector = LabelSelector.from_dict(spec.get("selector"))
    except SelectorError:
        status["disruptionsAllowed"] = 0
        out["status"] = status
        return out
    selected = sum(
        1
        for p in pods
        if podutil.is_active(p)
        and str(_meta(p).get("namespace") or "default") == namespace
        and selector.matches(_meta(p).get("labels") or {})
    )
    max_unavailable = _scaled(spec.get("maxUnavailable"), selected)
    min_available = _scaled(spec.get("minAvailable"), selected)
    if max_unavailable is not None:
        allowed = max_unavailable
    elif min_available is not None:
        allowed = selected - min_available
    else:
        allowed = selected  # neither field: the API server defaults nothing; treat as open
    status["disruptionsAllowed"] = max(0, allowed)
    out["status"] = status
    return out


class Replay:
    """The scenario's cluster, changed command by command."""

    def __init__(
        self,
        *,
        nodepools: Sequence[NodePool],
        templates: Sequence[NodePoolTemplate],
        nodes: Sequence[Mapping[str, Any]],
        nodeclaims: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        pdbs: Sequence[Mapping[str, Any]] = (),
        daemonsets: Sequence[Mapping[str, Any]] = (),
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
        now: datetime | None = None,
        spot_to_spot: bool = False,
        min_savings: float = 0.0,
        preference_policy: PreferencePolicy = "Respect",
        configs: Sequence[Mapping[str, Any]] = (),
        nodeclasses: Mapping[str, NodeClassKey | None] | None = None,
        overlays: Sequence[Mapping[str, Any]] = (),
        buffers: Sequence[Mapping[str, Any]] = (),
        pod_templates: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
        limit_ranges: Sequence[Mapping[str, Any]] = (),
        default_spread: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.default_spread = list(default_spread)
        """kube-scheduler's cluster-default spread constraints (`karpy simulate`'s flag)."""
        self.preference_policy: PreferencePolicy = preference_policy
        self.buffers = list(buffers)
        """CapacityBuffers (resolved): their virtual pods keep room, as in a cluster."""
        self.pod_templates = dict(pod_templates or {})
        self.limit_ranges = list(limit_ranges)
        """LimitRanges: their defaults fill missing requests in the fresh-cluster estimate."""
        self.overlays = list(overlays)
        """NodeOverlays: replacements are priced with them."""
        self.configs = list(configs)
        """SchedulingConfigs (karpy's extension): replacements keep to them."""
        self.nodeclasses = dict(nodeclasses or {})
        self.nodepools = {p.name: p for p in nodepools}
        self.templates = list(templates)
        self.pdbs = list(pdbs)
        self.daemonsets = list(daemonsets)
        self.namespaces = dict(namespaces or {})
        self.now = now or datetime.now(UTC)
        self.spot_to_spot = spot_to_spot
        self.min_savings = min_savings
        self.views = PodViews()
        self.timed_out = False
        """The last search stopped at its time budget without a command."""
        self._replacements = 0
        claimed = {str((c.get("status") or {}).get("providerID") or "") for c in nodeclaims} - {""}
        self.claims: dict[str, JSON] = {_name(c): dict(c) for c in nodeclaims}
        self.nodes: dict[str, JSON] = {}
        for node in nodes:
            pid = str((node.get("spec") or {}).get("providerID") or "")
            labels = _meta(node).get("labels") or {}
            if pid in claimed or LABEL_NODEPOOL not in labels:
                self.nodes[_name(node)] = dict(node)
                continue
            pid = pid or PROVIDER_PREFIX + _name(node)
            self.nodes[_name(node)] = _managed_node(node, pid)
            self.claims[_name(node)] = _settled_claim(node, pid)
        self.pods: dict[str, JSON] = {podutil.pod_key(p): dict(p) for p in pods}

    # -- reading ----------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        pods = list(self.pods.values())
        nodes = state_nodes(
            nodes=list(self.nodes.values()), nodeclaims=list(self.claims.values()), pods=pods
        )
        pending = [p for p in pods if not podutil.node_name(p) and podutil.is_active(p)]
        return build_snapshot(
            nodes=nodes,
            nodepools=self.nodepools,
            templates=self.templates,
            pdbs=[pdb_with_status(p, pods) for p in self.pdbs],
            pending=pending,
            daemonsets=self.daemonsets,
            namespaces=self.namespaces,
            now=self.now,
            spot_to_spot=self.spot_to_spot,
            min_savings=self.min_savings,
            views=self.views,
            preference_policy=self.preference_policy,
            configs=self.configs,
            nodeclasses=self.nodeclasses,
            overlays=self.overlays,
            buffers=self.buffers,
            pod_templates=self.pod_templates,
            default_spread=self.default_spread,
        )

    def cost(self, snapshot: Snapshot) -> tuple[float, int]:
        """Hourly cost of the managed nodes whose offering is known, and their count."""
        total = 0.0
        count = 0
        for node in snapshot.nodes:
            price = node_price(node, snapshot.templates.get(node.nodepool or ""))
            if price is not None:
                total += price
                count += 1
        return total, count

    def fresh(self) -> tuple[float, float]:
        """(cost, lower bound) of placing every active, non-DaemonSet pod on an empty cluster."""
        pods = [
            {**p, "spec": {k: v for k, v in (p.get("spec") or {}).items() if k != "nodeName"}}
            for p in self.pods.values()
            if podutil.is_active(p) and not podutil.is_owned_by_daemonset(p)
        ]
        built = build_input(
            ClusterObjects(
                pending=pods,
                daemonsets=self.daemonsets,
                namespaces=self.namespaces,
                templates=self.templates,
                configs=self.configs,
                nodeclasses=self.nodeclasses,
                overlays=self.overlays,
                buffers=self.buffers,
                pod_templates=self.pod_templates,
                limit_ranges=self.limit_ranges,
                # as `load_scenario` plans them: workload pods never went through LimitRanger
                admitted=False,
            ),
            views=PodViews(),
            preference_policy=self.preference_policy,
            default_spread=self.default_spread,
        )
        result = schedule(built.input)
        return result.cost, result.lower_bound

    # -- changing ---------------------------------------------------------------------------------

    def remove(self, names: Sequence[str]) -> None:
        gone = set(names)
        for name in names:
            node = self.nodes.pop(name, None)
            pid = str(((node or {}).get("spec") or {}).get("providerID") or "")
            for cname, claim in list(self.claims.items()):
                if cname == name or (
                    pid and str((claim.get("status") or {}).get("providerID") or "") == pid
                ):
                    del self.claims[cname]
        for key, pod in list(self.pods.items()):
            if podutil.node_name(pod) in gone:
                del self.pods[key]  # not moved: DaemonSet, static or finished pods go with it

    def move(self, moves: Mapping[str, str], replacement: str | None) -> None:
        for key, dest in moves.items():
            pod = self.pods.get(key)
            if pod is None:
                continue
            target = replacement if dest == REPLACEMENT else dest
            spec = dict(pod.get("spec") or {})
            spec["nodeName"] = target
            self.pods[key] = {**pod, "spec": spec}

    def launch(self, decision: Decision) -> NodeRef | None:
        claim = decision.replacement
        if claim is None or not claim.instance_types:
            return None
        it = claim.instance_types[0]
        offering = claim.offering
        zone = offering.zone if offering else ""
        ct = offering.capacity_type if offering else ""
        self._replacements += 1
        name = f"{claim.nodepool}-replacement-{self._replacements}"
        labels = {**it.requirements.labels(), **claim.labels}
        labels.update(
            {
                LABEL_NODEPOOL: claim.nodepool,
                LABEL_INSTANCE_TYPE: it.name,
                LABEL_TOPOLOGY_ZONE: zone,
                LABEL_CAPACITY_TYPE: ct,
                LABEL_HOSTNAME: name,
            }
        )
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "taints": [
                    {"key": t.key, "value": t.value, "effect": t.effect} for t in claim.taints
                ]
            }
            if claim.taints
            else {},
            "status": {
                "capacity": format_resources(it.capacity),
                "allocatable": format_resources(it.allocatable),
            },
        }
        pid = PROVIDER_PREFIX + name
        self.nodes[name] = _managed_node(node, pid)
        self.claims[name] = _settled_claim(node, pid)
        return NodeRef(name, claim.nodepool, it.name, zone, ct, offering.price if offering else 0.0)


def _ref(c: ConsolidationCandidate) -> NodeRef:
    labels = c.candidate.node.labels
    return NodeRef(
        c.name,
        c.nodepool,
        c.candidate.instance_type,
        labels.get(LABEL_TOPOLOGY_ZONE, ""),
        c.candidate.capacity_type,
        c.price,
    )


def _empty_nodes(snapshot: Snapshot) -> list[tuple[NodeRef, str]]:
    """Emptiness: empty, consolidatable candidates in consolidating NodePools, oldest first,
    within each NodePool's `Empty` budget: (node, NodePool)."""
    found: list[tuple[str, str, NodeRef]] = []
    for node in snapshot.nodes:
        try:
            c = candidate(
                node,
                nodepools=snapshot.nodepools,
                pdbs=snapshot.pdbs,
                now=snapshot.now,
                in_flight=tuple(snapshot.in_flight),
            )
        except NotCandidate:
            continue
        pool = c.nodepool
        if pool.is_static or pool.spec.disruption.consolidate_after_duration() is None:
            continue
        if not is_condition_true(node.nodeclaim, cond.NODECLAIM_CONSOLIDATABLE):
            continue
        if not c.is_empty():
            continue
        price = node_price(node, snapshot.templates.get(pool.name)) or 0.0
        ref = NodeRef(
            c.name,
            pool.name,
            c.instance_type,
            node.labels.get(LABEL_TOPOLOGY_ZONE, ""),
            c.capacity_type,
            price,
        )
        found.append((c.created, c.name, ref))
    remaining = budget_remaining(snapshot, cond.DISRUPTION_REASON_EMPTY)
    out: list[tuple[NodeRef, str]] = []
    baseline = buffer_misses(snapshot, set())
    for _, _, ref in sorted(found, key=lambda f: (f[0], f[1])):
        if remaining.get(ref.nodepool, 0) > 0:
            # an empty node a CapacityBuffer's virtual pods need stays, as in `karpy run`
            gone = {r.name for r, _ in out} | {ref.name}
            if buffer_misses(snapshot, gone) > baseline:
                break
            remaining[ref.nodepool] -= 1
            out.append((ref, ref.nodepool))
    return out


def _budgets(
    snapshot: Snapshot, reason: str, nodes: Sequence[NodeRef]
) -> dict[str, tuple[int, int]]:
    allowed = budget_remaining(snapshot, reason)
    taken: dict[str, int] = {}
    for n in nodes:
        taken[n.nodepool] = taken.get(n.nodepool, 0) + 1
    return {pool: (count, allowed.get(pool, 0)) for pool, count in sorted(taken.items())}


def _applied(
    replay: Replay, snapshot: Snapshot, decision: Decision, method: str, round_: int
) -> Step:
    """`decision` applied to `replay`, as the step it is."""
    refs = [_ref(c) for c in decision.candidates]
    budgets = _budgets(snapshot, cond.DISRUPTION_REASON_UNDERUTILIZED, refs)
    replacement = replay.launch(decision)
    replay.move(decision.moves, replacement.name if replacement else None)
    replay.remove([r.name for r in refs])
    types = [t.name for t in decision.replacement.instance_types] if decision.replacement else []
    return Step(
        method=method,
        reason=cond.DISRUPTION_REASON_UNDERUTILIZED,
        decision=decision.kind,
        nodes=refs,
        replacement=replacement,
        replacement_types=types,
        moves={
            k: (replacement.name if v == REPLACEMENT and replacement else v)
            for k, v in sorted(decision.moves.items())
        },
        budgets=budgets,
        round=round_,
    )


def next_steps(
    replay: Replay,
    snapshot: Snapshot,
    *,
    multi_timeout: float,
    single_timeout: float,
    round_: int = 1,
) -> list[Step]:
    """The commands the disruption loop's next pass would start, applied to `replay`; empty
    if there are none."""
    empty = _empty_nodes(snapshot)
    if empty:
        refs = [ref for ref, _ in empty]
        step = Step(
            method=METHOD_EMPTINESS,
            reason=cond.DISRUPTION_REASON_EMPTY,
            decision="delete",
            nodes=refs,
            replacement=None,
            replacement_types=[],
            moves={},
            budgets=_budgets(snapshot, cond.DISRUPTION_REASON_EMPTY, refs),
            round=round_,
        )
        replay.remove([r.name for r in refs])
        return [step]
    candidates, _ = consolidation_candidates(snapshot)
    budgets = budget_remaining(snapshot, cond.DISRUPTION_REASON_UNDERUTILIZED)
    decisions, stats = independent(
        snapshot, candidates, budgets, multi_node_search, timeout=multi_timeout
    )
    method = METHOD_MULTI
    if not decisions:
        decisions, stats = independent(
            snapshot, candidates, budgets, single_node_search, timeout=single_timeout
        )
        method = METHOD_SINGLE
    if not decisions:
        replay.timed_out = stats.timed_out
        return []
    return [_applied(replay, snapshot, d, method, round_) for d in decisions]


def plan_disruption(
    replay: Replay,
    *,
    max_rounds: int = 1000,
    multi_timeout: float = 60.0,
    single_timeout: float = 180.0,
    on_round: Callable[[int, int], None] | None = None,
) -> DisruptionPlan:
    """Replay commands until none is left (or `max_rounds`). `on_round(round, commands)` is
    told as each round starts, with the commands found so far (a progress display)."""
    plan = DisruptionPlan()
    snapshot = replay.snapshot()
    plan.cost_before, plan.nodes_before = replay.cost(snapshot)
    plan.fresh_cost, plan.lower_bound = replay.fresh()
    plan.converged = False
    for round_ in range(1, max_rounds + 1):
        if on_round is not None:
            on_round(round_, len(plan.steps))
        # each round builds a snapshot and simulates over it, a large graph that dies by
        # reference counting when the round ends; the collector's full scans of it while it
        # grows cost several times the search itself
        with gc_paused():
            steps = next_steps(
                replay,
                snapshot,
                multi_timeout=multi_timeout,
                single_timeout=single_timeout,
                round_=round_,
            )
            if not steps:
                plan.converged = not replay.timed_out
                break
            plan.steps.extend(steps)
            snapshot = replay.snapshot()
    plan.cost_after, plan.nodes_after = replay.cost(snapshot)
    _, plan.blocked = consolidation_candidates(snapshot)
    return plan
