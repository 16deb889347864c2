"""Consolidation decision time and savings on a large snapshot (`make bench BENCH=disruption`).

The snapshot: 1,000 on-demand nodes of 8-CPU kwok types (c, s and m families, four zones), each
filled with 10 pods of 100 Deployments (10,000 pods), then half of the pods deleted at random
(seeded): every node is a consolidation candidate. Cases:

* ``decision-1000-nodes``: one loop decision (the snapshot, multi-node search, then single-node
  until the first command), then a pass that evaluates every candidate on its own (all 1,000,
  no cap): wall and CPU time of each, simulations run, candidates the cheap checks ruled out;
  then a single-node pass as the loop runs it (`independent`: commands found one after the
  other within the 10% budget, up to 16): its wall and CPU time, commands and simulations.
  Both run off the event loop as `karpy run` runs them (cluster objects frozen out of the
  collector as after its sync, collector paused during the search), while a uvloop samples
  its own lag every 10 ms: `loop_lag_p99_ms` and `loop_lag_max_ms` over the whole (target
  p99 <= 100 ms), and `loop_lag_idle_p99_ms` over 2 s before it with nothing to compute (what
  the machine's load alone costs).
* ``converge-1000-nodes``: `karpy simulate --disruption`'s replay until no command is left:
  rounds, nodes removed and launched, hourly cost before and after, and the cost `karpy
  simulate` gives for the remaining pods on an empty cluster (and its lower bound).
* ``savings-basic-1000-to-500``: live, on the local control plane with a real `karpy run`
  (kwok): Karpenter's e2e "basic" workload (`bench_e2e`) with `consolidateAfter: 0s` and the
  budget in `BUDGETS`, 1,000 pods provisioned, both Deployments scaled to half (500 pods), then
  watched until the cluster converges: no decision (`karpenter_voluntary_disruption_decisions_
  total`) and no change of nodes or NodeClaims for `SETTLE` seconds, nothing deleting, every pod
  bound. Reported: seconds from the scale-down to the last change (target <= 300), the
  converged hourly cost, the cost `karpy simulate -o json` gives for the 500 pods alone (same
  NodePool, same code path as `bench_e2e`'s one-plan cost), their ratio (target <= 1.10) and
  the decisions by method, and a `timeline` of every pass and command after the scale-down
  from karpy's log (`decision_timeline`).

`BENCH_DISRUPTION_CASES` (comma-separated: decision, converge, savings) runs only those cases;
`BENCH_SAVINGS_LOG=<path>` keeps the savings case's karpy log there.

Wall and CPU time (the process's, steadier on a shared machine) are reported with the load
average.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvloop

from karpy.apis.v1 import validate_nodepool
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.controllers.disruption.consolidation import (
    budget_remaining,
    consolidation_candidates,
    multi_node,
    single_node,
)
from karpy.controllers.disruption.consolidation.independent import independent, single_node_search
from karpy.controllers.disruption.consolidation.search import SINGLE_NODE_TIMEOUT
from karpy.kube.memory import collector_paused, freeze_heap
from karpy.kube.offload import LoopLagMonitor, run_off_loop, shutdown_offload
from karpy.scheduling import format_resources
from karpy.scheduling.engine import NodePoolTemplate
from karpy.simulation.disruption import Replay, plan_disruption
from tests.bench import bench_e2e, timeline
from tests.e2e.karpy_process import Sample
from tests.kit import kwok_nodeclass

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


IDLE_SECONDS = 2.0


def _decide(r: Replay) -> JSON:
    """One loop decision as the consolidation methods make it off the loop (the snapshot, the
    candidates, multi-node search, then single-node until the first command), then every
    candidate evaluated on its own; wall and thread CPU time of each."""
    started, cpu = time.perf_counter(), time.thread_time()
    snapshot = r.snapshot()
    candidates, _ = consolidation_candidates(snapshot)
    prepared = time.perf_counter() - started
    multi, mstats = multi_node(snapshot, candidates)
    _, fstats = single_node(snapshot, candidates)
    decision = time.perf_counter() - started, time.thread_time() - cpu
    started, cpu = time.perf_counter(), time.thread_time()
    every, estats = single_node(snapshot, candidates, first=False)
    every_seconds = time.perf_counter() - started, time.thread_time() - cpu
    started, cpu = time.perf_counter(), time.thread_time()
    commands, pstats = independent(
        snapshot,
        candidates,
        budget_remaining(snapshot),
        single_node_search,
        timeout=SINGLE_NODE_TIMEOUT,
    )
    return {
        "candidates": len(candidates),
        "snapshot_seconds": round(prepared, 3),
        "multi_node_seconds": round(mstats.seconds, 3),
        "multi_node_simulations": mstats.simulations,
        "multi_node_nodes": len(multi.candidates) if multi else 0,
        "multi_node_decision": multi.kind if multi else None,
        "multi_node_saving": round(multi.savings, 4) if multi else 0.0,
        "single_node_first_seconds": round(fstats.seconds, 3),
        "decision_seconds": round(decision[0], 3),
        "decision_cpu_seconds": round(decision[1], 3),
        "every_candidate_seconds": round(every_seconds[0], 3),
        "every_candidate_cpu_seconds": round(every_seconds[1], 3),
        "every_candidate_evaluated": estats.considered,
        "every_candidate_simulations": estats.simulations,
        "every_candidate_pruned": estats.pruned,
        "every_candidate_consolidatable": len(every),
        "single_node_pass_seconds": round(time.perf_counter() - started, 3),
        "single_node_pass_cpu_seconds": round(time.thread_time() - cpu, 3),
        "single_node_pass_commands": len(commands),
        "single_node_pass_simulations": pstats.simulations,
        "timed_out": mstats.timed_out or estats.timed_out or pstats.timed_out,
    }


async def _decide_watched(r: Replay) -> JSON:
    """`_decide` in a worker thread (`run_off_loop`, as `karpy run` runs the search) while the
    loop samples its own lag every 10 ms and serves a stream of small callbacks (standing in
    for watch events and probes)."""
    monitor = LoopLagMonitor(interval=0.01, warn_threshold=10.0)
    sampler = asyncio.create_task(monitor.run())
    ticks = 0

    async def chatter() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    talker = asyncio.create_task(chatter())
    try:
        # the same loop with nothing to compute: what the machine's load alone costs
        await asyncio.sleep(IDLE_SECONDS)
        idle = monitor.percentile(0.99)
        monitor.samples.clear()
        out = await run_off_loop(collector_paused(_decide), r)
    finally:
        sampler.cancel()
        talker.cancel()
    return {
        **out,
        "loop_lag_idle_p99_ms": round(idle * 1000, 1),
        "loop_lag_samples": len(monitor.samples),
        "loop_lag_p99_ms": round(monitor.percentile(0.99) * 1000, 1),
        "loop_lag_max_ms": round(monitor.percentile(1.0) * 1000, 1),
        "loop_callbacks": ticks,
    }


def decision_case() -> JSON:
    nodes, pods = cluster()
    r = replay(nodes, pods)
    freeze_heap()  # as `karpy run` does once its caches have synced
    try:
        figures = uvloop.run(_decide_watched(r))
    finally:
        shutdown_offload()
    return {
        "case": "decision-1000-nodes",
        "nodes": len(nodes),
        "pods": len(pods),
        **figures,
        "targets": {"decision_seconds": 10, "loop_lag_p99_ms": 100},
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
        "commands": len(plan.steps),
        "rounds": len({step.round for step in plan.steps}),
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


# -- savings, live --------------------------------------------------------------------------

BUDGETS: list[JSON] = [{"nodes": "100%"}]
"""What a user who scales a workload down and wants the bill to follow sets (Karpenter's own
consolidation e2e tests use it); the default 10 % would pace deletions on purpose."""
SHARE = 0.5
SETTLE = 60.0
SAVINGS_TIMEOUT = 1200.0
DECISIONS = "karpenter_voluntary_disruption_decisions_total"
DISRUPTED = "karpenter_nodeclaims_disrupted_total"


def _by_labels(samples: list[Sample], name: str, *keys: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in samples:
        if s.name == name and s.value:
            label = "/".join(s.labels.get(k, "") for k in keys)
            out[label] = out.get(label, 0) + int(s.value)
    return dict(sorted(out.items()))


def _since(before: list[Sample], after: list[Sample], name: str, *keys: str) -> dict[str, int]:
    """`_by_labels` of `after` minus that of `before`."""
    was = _by_labels(before, name, *keys)
    now = _by_labels(after, name, *keys)
    return {k: v - was.get(k, 0) for k, v in now.items() if v - was.get(k, 0)}


def _fleet(kubectl: Any) -> tuple[frozenset[str], frozenset[str], bool]:
    """(live node names, NodeClaim names, whether anything is being deleted)."""
    nodes = kubectl.json("get", "nodes", "--selector=karpenter.sh/nodepool")["items"]
    claims = kubectl.json("get", "nodeclaims")["items"]
    deleting = any(o["metadata"].get("deletionTimestamp") for o in [*nodes, *claims])
    return (
        frozenset(
            n["metadata"]["name"] for n in nodes if not n["metadata"].get("deletionTimestamp")
        ),
        frozenset(c["metadata"]["name"] for c in claims),
        deleting,
    )


def decision_timeline(lines: Iterable[str], since: float) -> JSON:
    """Where the seconds after the scale-down went, from karpy's log: each pass that acted
    (method, commands, nodes; seconds to compute, in validation, to start, from `disruption
    pass`; the search's own from `consolidation search`) and each command (when it started,
    when its replacements were created and initialized, when its candidates were deleted and
    gone), in seconds after `since` (wall clock)."""
    events = timeline.log_events(lines)

    def at(t: float) -> float:
        return round(t - since, 1)

    searches = [(t, e) for t, e in events.get("consolidation search", []) if t >= since]
    passes = []
    for t, e in events.get("disruption pass", []):
        if t < since:
            continue
        search = next(
            (
                s
                for ts, s in reversed(searches)
                if ts <= t and s.get("consolidation_type") == e.get("consolidation-type")
            ),
            None,
        )
        passes.append(
            {
                "at": at(t),
                "method": f"{e.get('reason')}/{e.get('consolidation-type')}",
                "commands": e.get("commands"),
                "started": e.get("started"),
                "nodes": e.get("nodes"),
                "compute_seconds": e.get("compute_seconds"),
                "search_seconds": (search or {}).get("search_seconds"),
                "validation_seconds": e.get("validation_seconds"),
                "start_seconds": e.get("start_seconds"),
            }
        )
    created = {
        (e.get("NodeClaim") or {}).get("name"): (t, e.get("command-id"))
        for t, e in events.get("created replacement nodeclaim", [])
    }
    initialized = {
        (e.get("NodeClaim") or {}).get("name"): t
        for t, e in events.get("initialized nodeclaim", [])
    }
    deleting = {e.get("command-id"): t for t, e in events.get("deleting disruption candidates", [])}
    gone = {
        (e.get("NodeClaim") or {}).get("name"): t for t, e in events.get("deleted nodeclaim", [])
    }
    commands = []
    for message in ("disrupting node(s) via delete", "disrupting node(s) via replace"):
        for t, e in events.get(message, []):
            if t < since:
                continue
            cid = e.get("command-id")
            replacements = [n for n, (_, c) in created.items() if c == cid]
            claims = [(d.get("NodeClaim") or {}).get("name") for d in e.get("disrupted-nodes", [])]
            ends = [gone.get(n) for n in claims]
            commands.append(
                {
                    "started": at(t),
                    "decision": e.get("decision"),
                    "reason": e.get("reason"),
                    "nodes": len(claims),
                    "replacements_created": max(
                        (at(created[n][0]) for n in replacements), default=None
                    ),
                    "replacements_initialized": max(
                        (at(initialized[n]) for n in replacements if n in initialized),
                        default=None,
                    ),
                    "candidates_deleting": at(deleting[cid]) if cid in deleting else None,
                    "candidates_gone": (
                        at(max(x for x in ends if x is not None))
                        if ends and all(x is not None for x in ends)
                        else None
                    ),
                }
            )
    commands.sort(key=lambda c: c["started"])
    return {"passes": passes, "commands": commands}


def savings_case() -> JSON:
    total = sum(n for *_, n in bench_e2e.WORKLOAD)
    half = {name: round(n * SHARE) for name, _, _, n in bench_e2e.WORKLOAD}
    pool = bench_e2e.basic_nodepool(
        consolidate_after="0s", policy="WhenEmptyOrUnderutilized", budgets=BUDGETS
    )
    with tempfile.TemporaryDirectory(prefix="karpy-bench-savings-") as tmp:
        work = Path(tmp)
        with bench_e2e.basic_cluster(work, pool) as (kubectl, karpy):
            kubectl.apply(bench_e2e.basic_workload())
            provision_seconds, bound, _ = bench_e2e.wait_all_bound(kubectl, total)
            if bound < total:
                return {"case": "savings-basic-1000-to-500", "error": f"{bound}/{total} bound"}
            nodes_before, _, _ = _fleet(kubectl)
            cost_before = bench_e2e.launched_cost(kubectl)
            # consolidateAfter 0s: consolidation acts while the 1,000 pods arrive too; count
            # only what the scale-down causes
            earlier = karpy.metrics()
            scaled = time.monotonic()
            scaled_wall = time.time()
            for name, n in half.items():
                kubectl(
                    "scale",
                    f"deployment/{name}",
                    f"--replicas={n}",
                    f"--namespace={bench_e2e.NAMESPACE}",
                )
            last_change = scaled
            seen: tuple[Any, ...] | None = None
            converged = False
            while time.monotonic() - scaled < SAVINGS_TIMEOUT:
                try:
                    names, claims, deleting = _fleet(kubectl)
                    decisions = sum(_by_labels(karpy.metrics(), DECISIONS, "decision").values())
                    count, bound = bench_e2e.pod_counts(kubectl)
                except (subprocess.SubprocessError, OSError):
                    continue  # kubectl or /metrics timed out on a loaded machine
                state = (names, claims, deleting, decisions, count, bound)
                now = time.monotonic()
                if state != seen:
                    seen, last_change = state, now
                settled = not deleting and count == bound == sum(half.values())
                if settled and now - last_change >= SETTLE:
                    converged = True
                    break
                time.sleep(2.0)
            converge_seconds = last_change - scaled
            nodes_after, _, _ = _fleet(kubectl)
            cost_after = bench_e2e.launched_cost(kubectl)
            samples = karpy.metrics()
            spent = decision_timeline(
                karpy.log_path.read_text(errors="replace").splitlines(), scaled_wall
            )
            keep = os.environ.get("BENCH_SAVINGS_LOG")
            if keep:
                shutil.copyfile(karpy.log_path, keep)
            alone = bench_e2e.one_plan_cost(
                work,
                [kwok_nodeclass("default"), pool, *bench_e2e.basic_workload(SHARE)],
            )
            return {
                "case": "savings-basic-1000-to-500",
                "pods_before": total,
                "pods_after": sum(half.values()),
                "budgets": BUDGETS,
                "consolidate_after": "0s",
                "settle_seconds": SETTLE,
                "provision_seconds": round(provision_seconds, 2),
                "converged": converged,
                "converge_seconds": round(converge_seconds, 2),
                "nodes_before": len(nodes_before),
                "nodes_after": len(nodes_after),
                "cost_before": round(cost_before, 4),
                "cost_after": round(cost_after, 4),
                "simulate_cost": round(alone, 4),
                "ratio_to_simulate": round(cost_after / alone, 4) if alone else None,
                "decisions": _since(
                    earlier, samples, DECISIONS, "reason", "consolidation_type", "decision"
                ),
                "nodeclaims_disrupted": _since(earlier, samples, DISRUPTED, "reason"),
                "decisions_while_provisioning": _by_labels(
                    earlier, DECISIONS, "reason", "consolidation_type", "decision"
                ),
                "targets": {"converge_seconds": 300, "ratio_to_simulate": 1.10},
                "loadavg": _load(),
                "timeline": spent,
            }


def cases() -> Iterator[JSON]:
    wanted = {c for c in os.environ.get("BENCH_DISRUPTION_CASES", "").split(",") if c}
    runs = {"decision": decision_case, "converge": converge_case, "savings": savings_case}
    for name, run in runs.items():
        if not wanted or name in wanted:
            yield run()
