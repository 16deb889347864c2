"""Scheduling benchmarks: Karpenter's micro-benchmark reproduced in structure, plus quality cases.

Each case runs in its own subprocess (`python -m tests.bench.bench_scheduling CASE`) so that its
peak RSS (from `os.wait4`) is its own. Only `schedule()` is timed, as Karpenter's benchmark
times only `Solve()`, after a full garbage collection (building the input owes one). Every case
reports the plan's hourly cost, the lower bound and their ratio, with wall-clock `seconds` and
the process's `cpuSeconds` (the honest figure when other work shares the machine); the
20,000-pod cases also report the p99 lag of an asyncio loop ticking every 10 ms while the
simulation runs through `run_off_loop`, as the provisioner runs it.

Cases:
* ``karpenter-N``: Karpenter's 400 fake instance types (i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, five
  offerings, price 0.1/vCPU + 0.1/GB) and its five-class diverse pod mix (generic, zonal spread,
  hostname spread, zonal self-affinity, hostname anti-affinity), requests drawn with seed 42
  from the same value sets (not Go's exact draws).
* ``preferences-4000`` / ``ignore-preferences-4000``: Karpenter's preference pods.
* ``generic-N`` / ``zonal-N``: the generic class alone, and the three classes without
  hostname constraints, on the same catalogue (no node-count floor applies).
* ``kwok-*``: the same mixes on the 144-type kwok catalogue.
* ``e2e-basic``, ``e2e-wide``, ``e2e-wide-no-topology``: Karpenter's e2e performance workloads on
  the kwok catalogue restricted to < 32 vCPU, linux, on-demand (its default e2e NodePool).
* ``existing-N-M``: M pending pods of the full diverse mix against N existing kwok nodes (2x-16x
  linux types across four zones, 70% spot, 5% not yet initialized), each running two
  DaemonSet pods and bound pods of the same mix filling it to 60-100% of its CPU or memory
  (one in five nodes holds an anti-affine nginx pod), so some pending pods fit on existing
  nodes and the rest need new ones: the provisioner's path in a populated cluster.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.scheduling import (
    InstanceType,
    Offering,
    PodView,
    Requirement,
    Requirements,
    pod_view,
)
from karpy.scheduling.engine import (
    ExistingNode,
    NodePoolTemplate,
    SchedulingInput,
    SchedulingResult,
    schedule,
)

GI = 1024**3
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
KARPENTER_SIZES = (1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000)
# Karpenter's sec/op on an Apple M3 Pro (PR #2486), for comparison in the output.
KARPENTER_SECONDS = {
    1: 0.000164,
    50: 0.0375,
    100: 0.0767,
    500: 0.388,
    1000: 0.777,
    2000: 1.54,
    5000: 3.74,
    10000: 8.11,
    20000: 20.19,
}
CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMS = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")


# ---- catalogues -------------------------------------------------------------------------------


def fake_instance_types(n: int = 400) -> list[InstanceType]:
    """Karpenter's `fake.InstanceTypes(n)`: one shape (1 vCPU : 2 GiB), linear prices."""
    offers = (
        ("spot", "test-zone-1"),
        ("spot", "test-zone-2"),
        ("on-demand", "test-zone-1"),
        ("on-demand", "test-zone-2"),
        ("on-demand", "test-zone-3"),
    )
    labels = Requirements(
        [
            Requirement("kubernetes.io/arch", complement=False, values=["amd64"]),
            Requirement(
                "kubernetes.io/os", complement=False, values=["linux", "windows", "darwin"]
            ),
        ]
    )
    out = []
    for i in range(n):
        cpu, mem = i + 1, 2 * (i + 1) * GI
        price = 0.1 * cpu + 0.1 * mem / 1e9
        out.append(
            InstanceType(
                name=f"fake-it-{i}",
                capacity={"cpu": cpu * 1000, "memory": mem, "pods": 10 * (i + 1)},
                offerings=[Offering(zone=z, capacity_type=ct, price=price) for ct, z in offers],
                requirements=labels,
                overhead={"cpu": 100, "memory": 10 * 1024**2},
            )
        )
    return out


def fake_pool() -> NodePoolTemplate:
    return NodePoolTemplate(
        name="default",
        instance_types=fake_instance_types(),
        limits={"cpu": 10_000_000 * 1000, "memory": 10_000_000 * GI},
    )


def kwok_pool(*, e2e: bool = False) -> NodePoolTemplate:
    reqs = [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    if e2e:
        reqs += [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.kwok.sh/instance-cpu", "operator": "Lt", "values": ["32"]},
        ]
    return NodePoolTemplate(
        name="default",
        requirements=Requirements.from_node_selector_terms(reqs),
        instance_types=kwok_instance_types(),
    )


# ---- pod mixes --------------------------------------------------------------------------------


def _pod(i: int, labels: dict[str, str], cpu: str, mem: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"pod-{i}",
            "namespace": "default",
            "labels": labels,
            "uid": f"uid-{i}",
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}],
            **spec,
        },
    }


def diverse_pods(n: int, *, classes: tuple[str, ...], seed: int = 42) -> list[dict[str, Any]]:
    """Karpenter's `makeDiversePods`: n/5 per class, the remainder generic."""
    rng = random.Random(seed)

    def value() -> str:
        return rng.choice("abcdefg")

    def requests() -> tuple[str, str]:
        return rng.choice(CPUS), rng.choice(MEMS)

    def spread(key: str) -> dict[str, Any]:
        return {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"my-label": value()}},
                }
            ]
        }

    pods: list[dict[str, Any]] = []
    per = n // 5
    for cls in classes:
        for _ in range(per):
            i = len(pods)
            cpu, mem = requests()
            if cls == "generic":
                pods.append(_pod(i, {"my-label": value()}, cpu, mem))
            elif cls == "zonal-spread":
                pods.append(_pod(i, {"my-label": value()}, cpu, mem, **spread(ZONE)))
            elif cls == "hostname-spread":
                pods.append(_pod(i, {"my-label": value()}, cpu, mem, **spread(HOSTNAME)))
            elif cls == "zonal-affinity":
                v = value()
                term = {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"my-affininity": v}}}
                aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
                pods.append(_pod(i, {"my-affininity": v}, cpu, mem, affinity=aff))
            elif cls == "hostname-anti":
                term = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "nginx"}}}
                aff = {
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
                }
                pods.append(_pod(i, {"app": "nginx"}, cpu, mem, affinity=aff))
    while len(pods) < n:
        cpu, mem = requests()
        pods.append(_pod(len(pods), {"my-label": value()}, cpu, mem))
    return pods


FULL = ("generic", "zonal-spread", "hostname-spread", "zonal-affinity", "hostname-anti")
NO_HOSTNAME = ("generic", "zonal-spread", "zonal-affinity")


def preference_pods(n: int, *, zone: str, seed: int = 42) -> list[dict[str, Any]]:
    """Karpenter's `makePreferencePods`."""
    rng = random.Random(seed)
    pods = []
    for i in range(n):
        aff = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]
                        },
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "topologyKey": ZONE,
                            "labelSelector": {"matchLabels": {"app": "nginx"}},
                        },
                    },
                    {
                        "weight": 1,
                        "podAffinityTerm": {
                            "topologyKey": HOSTNAME,
                            "labelSelector": {"matchLabels": {"app": "nginx"}},
                        },
                    },
                ]
            },
        }
        pods.append(_pod(i, {"app": "nginx"}, rng.choice(CPUS), rng.choice(MEMS), affinity=aff))
    return pods


def e2e_basic() -> list[dict[str, Any]]:
    pods = [_pod(i, {"app": "small"}, "900m", "3100Mi") for i in range(500)]
    pods += [_pod(500 + i, {"app": "large"}, "3500m", "28Gi") for i in range(500)]
    return pods


def e2e_wide(*, topology: bool) -> list[dict[str, Any]]:
    """30 deployments, 1,000 pods, 0.225-3.8 vCPU and 300Mi-64Gi each; with topology, three
    deployments use hostname anti-affinity and three a hostname spread."""
    cpus = ["225m", "450m", "900m", "1200m", "1800m", "2400m", "3", "3800m"]
    mems = ["300Mi", "512Mi", "1Gi", "2Gi", "3Gi", "4Gi", "6Gi", "8Gi", "16Gi", "64Gi"]
    pods: list[dict[str, Any]] = []
    for d in range(30):
        replicas = 1000 // 30 + (1 if d < 1000 % 30 else 0)
        cpu, mem = cpus[d % len(cpus)], mems[(3 * d) % len(mems)]
        labels = {"app": f"wide-{d}"}
        spec: dict[str, Any] = {}
        if topology and d < 3:
            term = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": labels}}
            spec["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        elif topology and d < 6:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": HOSTNAME,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": labels},
                }
            ]
        for _ in range(replicas):
            pods.append(_pod(len(pods), dict(labels), cpu, mem, **spec))
    return pods


# ---- an existing cluster ----------------------------------------------------------------------

EXISTING_NODES = (200, 1000, 2000)
EXISTING_PODS = (100, 500, 2000)
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d")
DAEMONSETS = (("ds-logs", "100m", "128Mi"), ("ds-net", "50m", "64Mi"))


def _daemon_pod(name: str, cpu: str, mem: str, node: str = "") -> dict[str, Any]:
    raw = _pod(0, {"app": name}, cpu, mem, tolerations=[{"operator": "Exists"}])
    raw["metadata"].update(name=f"{name}-{node or 'template'}", uid=f"{name}-{node}")
    raw["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": name, "controller": True}]
    if node:
        raw["spec"]["nodeName"] = node
    return raw


def existing_cluster(
    n: int, *, free_up_to: float = 0.2, seed: int = 7
) -> tuple[list[ExistingNode], list[PodView]]:
    """n kwok nodes, each with the DaemonSet pods and bound pods of the diverse mix, filled
    until CPU or memory has less than a random fraction (up to `free_up_to`) left."""
    rng = random.Random(seed)
    types = [
        t
        for t in kwok_instance_types()
        if t.name.endswith("-linux") and t.name.split("-")[1] in ("2x", "4x", "8x", "16x")
    ]
    bound_raws = diverse_pods(20 * n, classes=FULL, seed=seed + 1)
    rng.shuffle(bound_raws)
    nginx_used = False
    nodes: list[ExistingNode] = []
    for i in range(n):
        it = rng.choice(types)
        name = f"existing-{i:05d}"
        labels = {
            HOSTNAME: name,
            ZONE: rng.choice(ZONES),
            "karpenter.sh/capacity-type": "spot" if rng.random() < 0.7 else "on-demand",
            "karpenter.sh/nodepool": "default",
            "karpenter.sh/registered": "true",
        }
        for key, req in it.requirements.items():
            if key not in (ZONE, "karpenter.sh/capacity-type") and len(req.values) == 1:
                labels[key] = next(iter(req.values))
        initialized = rng.random() >= 0.05
        if initialized:
            labels["karpenter.sh/initialized"] = "true"
        pods = [pod_view(_daemon_pod(d, c, m, name)) for d, c, m in DAEMONSETS]
        free = dict(it.allocatable)
        for p in pods:
            for k, v in p.requests.items():
                free[k] = free.get(k, 0) - v
        target = rng.uniform(0.0, free_up_to)
        nginx_here = rng.random() < 0.2
        while bound_raws:
            raw = bound_raws[-1]
            anti = "podAntiAffinity" in (raw["spec"].get("affinity") or {})
            if anti and not nginx_here:
                bound_raws.pop()  # keep the anti-affine pods to one per chosen node
                continue
            view = pod_view(raw)
            if any(free.get(k, 0) < v for k, v in view.requests.items()):
                break
            bound_raws.pop()
            raw["metadata"]["name"] = f"bound-{i}-{len(pods)}"
            raw["metadata"]["uid"] = f"bound-uid-{i}-{len(pods)}"
            raw["spec"]["nodeName"] = name
            pods.append(pod_view(raw))
            for k, v in view.requests.items():
                free[k] -= v
            if anti:
                nginx_here = False
                nginx_used = True
            if any(free[k] < target * it.allocatable[k] for k in ("cpu", "memory")):
                break
        nodes.append(
            ExistingNode(
                name=name,
                labels=labels,
                allocatable=dict(it.allocatable),
                capacity=dict(it.capacity),
                pods=pods,
                initialized=initialized,
                nodepool="default",
            )
        )
    assert nginx_used
    daemons = [pod_view(_daemon_pod(d, c, m), daemon=True) for d, c, m in DAEMONSETS]
    return nodes, daemons


# ---- cases ------------------------------------------------------------------------------------


@dataclass
class Case:
    raws: list[dict[str, Any]]
    templates: list[NodePoolTemplate]
    extra: dict[str, Any]
    existing: list[ExistingNode] = field(default_factory=list)
    daemons: list[PodView] = field(default_factory=list)


Builder = Callable[[], tuple[list[dict[str, Any]], list[NodePoolTemplate], dict[str, Any]]]


def _cases() -> dict[str, Builder]:
    cases: dict[str, Builder] = {}
    for n in KARPENTER_SIZES:
        cases[f"karpenter-{n}"] = lambda n=n: (
            diverse_pods(n, classes=FULL),
            [fake_pool()],
            {"catalog": "fake400", "karpenterSeconds": KARPENTER_SECONDS[n]},
        )
    cases["preferences-4000"] = lambda: (
        preference_pods(4000, zone="test-zone-1"),
        [fake_pool()],
        {"catalog": "fake400", "karpenterSeconds": 11.66},
    )
    cases["ignore-preferences-4000"] = lambda: (
        preference_pods(4000, zone="test-zone-1"),
        [fake_pool()],
        {"catalog": "fake400", "preferencePolicy": "Ignore"},
    )
    for n in (1000, 5000, 20000):
        cases[f"generic-{n}"] = lambda n=n: (
            diverse_pods(n, classes=("generic",) * 5),
            [fake_pool()],
            {"catalog": "fake400"},
        )
        cases[f"zonal-{n}"] = lambda n=n: (
            diverse_pods(n, classes=NO_HOSTNAME),
            [fake_pool()],
            {"catalog": "fake400"},
        )
    for n in (500, 5000, 20000):
        cases[f"kwok-generic-{n}"] = lambda n=n: (
            diverse_pods(n, classes=("generic",) * 5),
            [kwok_pool()],
            {"catalog": "kwok"},
        )
        cases[f"kwok-zonal-{n}"] = lambda n=n: (
            diverse_pods(n, classes=NO_HOSTNAME),
            [kwok_pool()],
            {"catalog": "kwok"},
        )
        cases[f"kwok-karpenter-{n}"] = lambda n=n: (
            diverse_pods(n, classes=FULL),
            [kwok_pool()],
            {"catalog": "kwok"},
        )
    cases["e2e-basic"] = lambda: (e2e_basic(), [kwok_pool(e2e=True)], {"catalog": "kwok<32"})
    cases["e2e-wide"] = lambda: (
        e2e_wide(topology=True),
        [kwok_pool(e2e=True)],
        {"catalog": "kwok<32"},
    )
    cases["e2e-wide-no-topology"] = lambda: (
        e2e_wide(topology=False),
        [kwok_pool(e2e=True)],
        {"catalog": "kwok<32"},
    )
    for nodes in EXISTING_NODES:
        for n in EXISTING_PODS:
            cases[f"existing-{nodes}-{n}"] = lambda n=n, nodes=nodes: (
                diverse_pods(n, classes=FULL),
                [kwok_pool()],
                {"catalog": "kwok", "existingNodes": nodes},
            )
    # a full cluster: every class scans every node and almost nothing fits
    cases["existing-full-1000-2000"] = lambda: (
        diverse_pods(2000, classes=FULL),
        [kwok_pool()],
        {"catalog": "kwok", "existingNodes": 1000, "freeUpTo": 0.02},
    )
    return cases


def _build(name: str) -> Case:
    raws, templates, extra = _cases()[name]()
    case = Case(raws=raws, templates=templates, extra=extra)
    if "existingNodes" in extra:
        case.existing, case.daemons = existing_cluster(
            extra["existingNodes"], free_up_to=extra.get("freeUpTo", 0.2)
        )
    return case


async def _timed_in_thread(inp: SchedulingInput) -> tuple[SchedulingResult, float, float]:
    """Schedule through `run_off_loop` (as the provisioner does) while the loop ticks every
    10 ms; return the p99 lag. (Importing karpy.kube adds about 90 MB of RSS, mostly the
    Kubernetes client, so only this case pays for it.)"""
    from karpy.kube.offload import run_off_loop, shutdown_offload

    lags: list[float] = []
    done = False

    async def tick() -> None:
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append(max(0.0, time.perf_counter() - start - 0.01))

    ticker = asyncio.create_task(tick())
    start = time.perf_counter()
    result = await run_off_loop(schedule, inp)
    seconds = time.perf_counter() - start
    done = True
    await ticker
    shutdown_offload()
    lags.sort()
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] if lags else 0.0
    return result, seconds, p99


def run_case(name: str) -> dict[str, Any]:
    case = _build(name)
    extra = case.extra
    policy = extra.pop("preferencePolicy", "Respect")
    # warm up imports (numpy, HiGHS) and code paths outside the timed region
    schedule(SchedulingInput(pods=[pod_view(_pod(0, {}, "1", "1Gi"))], templates=[fake_pool()]))
    pods: list[PodView] = [pod_view(r) for r in case.raws]
    inp = SchedulingInput(
        pods=pods,
        templates=case.templates,
        existing_nodes=case.existing,
        daemonset_pods=case.daemons,
        preference_policy=policy,
    )
    out: dict[str, Any] = {}
    if len(pods) >= 20000:
        from karpy.kube import offload  # noqa: F401  (imported before the RSS reading below)
    # a full collection owed for building the input would otherwise land in the timed call
    gc.collect()
    # peak RSS before the timed call: interpreter, imports and the input
    out["inputRssMB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    cpu_start = time.process_time()
    if len(pods) >= 20000:
        result, seconds, lag = asyncio.run(_timed_in_thread(inp))
        out["loopLagP99Ms"] = round(lag * 1000, 1)
    else:
        start = time.perf_counter()
        result = schedule(inp)
        seconds = time.perf_counter() - start
    # CPU time of the process: robust to other work on the machine, unlike wall time
    out["cpuSeconds"] = round(time.process_time() - cpu_start, 3)
    types = [c.instance_types[0].name for c in result.node_claims]
    if case.existing:
        out["onExisting"] = sum(len(v) for v in result.existing.values())
        out["onNew"] = sum(len(c.pods) for c in result.node_claims)
        out["boundPods"] = sum(len(n.pods) for n in case.existing)
    return {
        "case": name,
        "pods": len(pods),
        "nodes": len(result.node_claims),
        "seconds": round(seconds, 3),
        "podsPerSecond": round(len(pods) / seconds) if seconds > 0 else None,
        "cost": round(result.cost, 4),
        "lowerBound": round(result.lower_bound, 4),
        "ratio": round(result.ratio, 4),
        "unschedulable": len(result.errors),
        "instanceTypes": len(set(types)),
        "medianPodsPerNode": statistics.median([len(c.pods) for c in result.node_claims])
        if result.node_claims
        else 0,
        **out,
        **extra,
    }


def cases() -> Iterator[dict[str, Any]]:
    """One subprocess per case; yields its JSON result with the child's peak RSS."""
    wanted = [c for c in os.environ.get("BENCH_CASES", "").split(",") if c]
    for name in _cases():
        if wanted and name not in wanted:
            continue
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.bench_scheduling", name],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        output = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            yield {"case": name, "error": f"exit status {proc.returncode}"}
            continue
        result = json.loads(output)
        result["peakRssMB"] = round(usage.ru_maxrss / 1024, 1)
        yield result


if __name__ == "__main__":
    print(json.dumps(run_case(sys.argv[1])), flush=True)
