"""`karpy simulate` as a user runs it: the whole command, timed from outside.

Each case writes a scenario to a temporary directory and runs
`python -m karpy.cli simulate -o json -f ...` as a subprocess; it reports the command's wall
time, its CPU time and peak RSS (from `os.wait4`), the solve time the plan reports
(`stats.seconds`), their ratio, and the plan's cost. The load average is reported too: the
machine may be shared.

Cases:
* ``karpenter-20000-full-pods``: Karpenter's 20,000-pod benchmark (its diverse five-class mix on
  its 400 fake instance types, written as a catalogue file) exported as a `kubectl get pods
  -o json` List of full Pod objects: metadata with managedFields, ownerReferences, labels and
  annotations; spec with containers, the default tolerations, affinity, volumes; status.
* ``kwok-10-pods``: ten pods and a NodePool in a multi-document YAML file on the built-in kwok
  catalogue: the start-up cost of the command.

Every case runs as installed programs run: with compiled bytecode (the container image compiles
it at build time). The bytecode goes to a cache under the case's directory
(`PYTHONPYCACHEPREFIX`), filled by an untimed run first, so the tree stays clean even where
`PYTHONDONTWRITEBYTECODE` is set. ``kwok-10-pods-no-bytecode`` runs without any, as a checkout
with `PYTHONDONTWRITEBYTECODE=1` does: every module is compiled from source at every start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

NODEPOOL: dict[str, Any] = {
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
                ],
            }
        }
    },
}


def full_pod(i: int, raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` (name, labels, requests, affinity or spreads) as the API server returns it."""
    meta, spec = raw["metadata"], raw["spec"]
    rs = f"bench-{i % 50:02d}-7d9c8b6f5"
    name = f"{rs}-{i:05d}"
    created = "2026-11-30T10:00:00Z"
    requests = spec["containers"][0]["resources"]["requests"]
    labels = {**meta["labels"], "pod-template-hash": "7d9c8b6f5"}
    pod_spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "imagePullPolicy": "IfNotPresent",
                "resources": {"requests": dict(requests)},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
        ],
    }
    for key in ("affinity", "topologySpreadConstraints"):
        if key in spec:
            pod_spec[key] = spec[key]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": created,
            "generateName": f"{rs}-",
            "labels": labels,
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:generateName": {},
                            "f:labels": {".": {}, **{f"f:{k}": {} for k in labels}},
                            "f:ownerReferences": {".": {}, f'k:{{"uid":"uid-{rs}"}}': {}},
                        },
                        "f:spec": {
                            "f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}}},
                        },
                    },
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "time": created,
                },
            ],
            "name": name,
            "namespace": meta["namespace"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": rs,
                    "uid": f"uid-{rs}",
                }
            ],
            "resourceVersion": str(100000 + i),
            "uid": f"0b6a1c2e-0000-4000-8000-{i:012d}",
        },
        "spec": pod_spec,
        "status": {
            "conditions": [
                {
                    "lastProbeTime": None,
                    "lastTransitionTime": created,
                    "message": "0/3 nodes are available: 3 Insufficient cpu.",
                    "reason": "Unschedulable",
                    "status": "False",
                    "type": "PodScheduled",
                }
            ],
            "phase": "Pending",
            "qosClass": "Guaranteed",
        },
    }


def _write_20k(work: Path) -> list[str]:
    from karpy.scheduling import dump_catalog
    from tests.bench.bench_scheduling import FULL, diverse_pods, fake_instance_types

    catalog = work / "fake400.json"
    catalog.write_text(json.dumps(dump_catalog(fake_instance_types())))
    pods = [full_pod(i, raw) for i, raw in enumerate(diverse_pods(20000, classes=FULL))]
    scenario = work / "pods.json"
    doc = {"apiVersion": "v1", "kind": "List", "items": [NODEPOOL, *pods], "metadata": {}}
    scenario.write_text(json.dumps(doc, separators=(",", ":")))
    return ["-f", str(scenario), "--instance-types", str(catalog), "--max-pods", "20000"]


def _write_10(work: Path) -> list[str]:
    import yaml

    from tests.bench.bench_scheduling import diverse_pods

    pods = [full_pod(i, raw) for i, raw in enumerate(diverse_pods(10, classes=("generic",)))]
    scenario = work / "pods.yaml"
    scenario.write_text(yaml.safe_dump_all([NODEPOOL, *pods]))
    return ["-f", str(scenario)]


CASES = {
    "karpenter-20000-full-pods": _write_20k,
    "kwok-10-pods": _write_10,
    "kwok-10-pods-no-bytecode": _write_10,
}


def _supports_max_pods() -> bool:
    out = subprocess.run(
        [sys.executable, "-m", "karpy.cli", "simulate", "--help"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return "--max-pods" in out


def _small(command: list[str], work: Path) -> list[str]:
    """`command` on a one-pod scenario: imports every module the timed run will."""
    import yaml

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "warm"},
        "spec": {"containers": [{"name": "c"}]},
    }
    scenario = work / "warm.yaml"
    scenario.write_text(yaml.safe_dump_all([NODEPOOL, pod]))
    return [*command[: command.index("-f")], "-f", str(scenario)]


def run_case(name: str, work: Path) -> dict[str, Any]:
    # written by another process, so that this one stays small (see `cases`)
    args = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tests.bench.bench_simulate", name, str(work)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    if "--max-pods" in args and not _supports_max_pods():
        args = args[: args.index("--max-pods")]
    size = Path(args[1]).stat().st_size
    command = [sys.executable, "-m", "karpy.cli", "simulate", "-o", "json", *args]
    env = dict(os.environ)
    bytecode = not name.endswith("-no-bytecode")
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        subprocess.run(_small(command, work), env=env, check=True, capture_output=True)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    load = os.getloadavg()[0]
    errors = work / "stderr"
    start = time.perf_counter()
    with errors.open("wb") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, env=env)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        return {"case": name, "error": errors.read_text(errors="replace").strip()[-500:]}
    plan = json.loads(out)
    solve = float(plan["stats"]["seconds"])
    result: dict[str, Any] = {
        "case": name,
        "scenarioMB": round(size / 1e6, 1),
        "pods": plan["stats"]["pods"],
        "nodes": plan["stats"]["nodeClaims"],
        "wallSeconds": round(wall, 3),
        "solveSeconds": round(solve, 3),
        "wallOverSolve": round(wall / solve, 2) if solve > 0 else None,
        "cost": plan["cost"]["total"],
        "ratio": plan["cost"]["ratio"],
        "unschedulable": len(plan["unschedulable"]),
        "loadAverage1m": round(load, 2),
        "bytecode": bytecode,
    }
    result["cpuSeconds"] = round(usage.ru_utime + usage.ru_stime, 3)
    result["peakRssMB"] = round(usage.ru_maxrss / 1024, 1)
    return result


def cases() -> Iterator[dict[str, Any]]:
    """Each case runs from a fresh small process: on Linux a child's peak RSS starts from the
    peak of the process that spawned it, so this (grown) one must not spawn the timed command."""
    wanted = [c for c in os.environ.get("BENCH_CASES", "").split(",") if c]
    for name in CASES:
        if wanted and name not in wanted:
            continue
        out = subprocess.run(
            [sys.executable, "-m", "tests.bench.bench_simulate", "run", name],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        yield json.loads(out)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        with tempfile.TemporaryDirectory(prefix="karpy-bench-simulate-") as tmp:
            print(json.dumps(run_case(sys.argv[2], Path(tmp))))
    else:
        print(json.dumps(CASES[sys.argv[1]](Path(sys.argv[2]))))
