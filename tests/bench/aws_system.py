"""The whole-system AWS case of `make bench BENCH=aws`: `karpy run` with PROVIDER=aws against a
moto server, then the same workload with PROVIDER=kwok for the memory baseline.

Each run: a private control plane, `karpy run` as a subprocess, the NodePool of the examples
(`manifests/examples/aws/nodepool.yaml` with the moto EC2NodeClass of `hack/aws/`, or the kwok
example with its CPU limit raised to fit), and a Deployment of `BENCH_AWS_PODS` pending pods
(default 500; 1 CPU, 1 GiB each). Reported per provider:

- `seconds`: from the Deployment created to the last NodeClaim's `Launched` condition (all
  NodeClaims launched and their number steady for `SETTLE` seconds);
- `cloudproviderCalls`: `karpy_cloudprovider_calls_total` by method/outcome, and
  `cloudproviderSeconds` (`karpenter_cloudprovider_duration_seconds` sum by method: the first
  GetInstanceTypes holds the catalogue refresh, which karpy neither logs nor times apart);
- `awsCalls` (aws only): what moto received, by service:Action, from moto's request recorder
  started after seeding;
- `rssMB` / `peakRssMB`: karpy's VmRSS / VmHWM (/proc/<pid>/status) once all are launched.

No kubelets run: the pods stay pending, so the figures are provisioning and launching only.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.bench.awsstack import REPO, Kubectl, aws_settings, control_plane, seed_moto, start_moto
from tests.bench.timeline import condition_time
from tests.e2e.karpy_process import KarpyProcess, Sample
from tests.e2e.support import deployment

__all__ = ["PODS", "whole_system"]

PODS = int(os.environ.get("BENCH_AWS_PODS", "500"))
NAMESPACE = "bench"
TIMEOUT = 900.0
SETTLE = 10.0
"""Seconds the NodeClaim count must hold, all launched, before the measure ends."""
KWOK_CPU_LIMIT = "1000"
"""The kwok example NodePool allows 100 CPUs; the workload needs `PODS`."""
JSON = dict[str, Any]


def _status_kb(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def _by_method(samples: list[Sample], name: str, *labels: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in samples:
        if s.name == name and s.value:
            key = "/".join(s.labels.get(label, "") for label in labels)
            out[key] = round(out.get(key, 0.0) + s.value, 2)
    return dict(sorted(out.items()))


def _recorded(text: str) -> Iterator[JSON]:
    """The recorder's entries: one JSON object a line, except that moto's threads may write
    two onto one line (their newlines then follow), so objects are decoded one after another."""
    decoder = json.JSONDecoder()
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return
        entry, at = decoder.raw_decode(text, at)
        yield entry


def moto_calls(recording: Path) -> dict[str, int]:
    """service:Action of each request moto recorded (query-protocol body, X-Amz-Target, or the
    method and path of a REST call such as EKS DescribeCluster)."""
    calls: Counter[str] = Counter()
    if not recording.exists():
        return {}
    for entry in _recorded(recording.read_text()):
        headers = {k.lower(): v for k, v in (entry.get("headers") or {}).items()}
        scope = headers.get("authorization", "").split("Credential=")[-1].split("/")
        service = scope[3] if len(scope) > 3 else "?"
        target = headers.get("x-amz-target")
        if target:
            action = target.rsplit(".", 1)[-1]
        else:
            body = entry.get("body") or ""
            if entry.get("body_encoded"):
                body = base64.b64decode(body).decode(errors="replace")
            query = urllib.parse.urlparse(entry.get("url", "")).query
            form = urllib.parse.parse_qs(f"{body}&{query}")
            path = urllib.parse.urlparse(entry.get("url", "")).path
            action = (form.get("Action") or [f"{entry.get('method')} {path}"])[0]
        calls[f"{service}:{action}"] += 1
    return dict(sorted(calls.items()))


def _manifests(provider: str, ami: str) -> list[JSON]:
    if provider == "aws":
        nodeclass = (REPO / "hack/aws/moto-ec2nodeclass.yaml").read_text().replace("AMI_ID", ami)
        pool = yaml.safe_load((REPO / "manifests/examples/aws/nodepool.yaml").read_text())
        return [yaml.safe_load(nodeclass), pool]
    kwok = REPO / "manifests/examples/kwok"
    pool = yaml.safe_load((kwok / "nodepool.yaml").read_text())
    pool["spec"]["limits"]["cpu"] = KWOK_CPU_LIMIT
    return [yaml.safe_load((kwok / "kwoknodeclass.yaml").read_text()), pool]


def _launched_when_settled(kubectl: Kubectl, created: float) -> tuple[float, int]:
    """Seconds from `created` to the last Launched, once all are launched and steady."""
    steady_since: float | None = None
    count = -1
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        claims = kubectl.json("get", "nodeclaims")["items"]
        times = [condition_time(c, "Launched") for c in claims]
        done = bool(claims) and all(t is not None for t in times)
        if done and len(claims) == count:
            if steady_since is None:
                steady_since = time.monotonic()
            elif time.monotonic() - steady_since >= SETTLE:
                return max(t for t in times if t is not None) - created, len(claims)
        else:
            steady_since = None
        count = len(claims)
        time.sleep(1.0)
    raise TimeoutError(f"NodeClaims not all launched after {TIMEOUT:.0f} s")


def _run(provider: str, work_dir: Path) -> JSON:
    cp, kubectl = control_plane(work_dir, NAMESPACE)
    moto = None
    karpy: KarpyProcess | None = None
    try:
        settings: dict[str, str] = {"LOG_LEVEL": "info", "PROVIDER": provider}
        ami = ""
        recording = work_dir / "moto-calls.jsonl"
        if provider == "aws":
            moto, endpoint = start_moto(work_dir, {"MOTO_RECORDER_FILEPATH": str(recording)})
            ami = seed_moto(endpoint)
            start = urllib.request.Request(
                f"{endpoint}/moto-api/recorder/start-recording", method="POST"
            )
            urllib.request.urlopen(start, timeout=10).close()
            settings.update(aws_settings(endpoint))
        karpy = KarpyProcess(
            kubeconfig=str(cp.kubeconfig), log_path=work_dir / "karpy.log", settings=settings
        ).start()
        karpy.wait_ready(timeout=120)
        assert karpy.proc is not None
        for manifest in _manifests(provider, ami):
            kubectl.apply(manifest)
        idle = _status_kb(karpy.proc.pid)
        load_before = os.getloadavg()
        created = time.time()
        kubectl.apply(deployment("load", NAMESPACE, replicas=PODS))
        seconds, claims = _launched_when_settled(kubectl, created)
        memory = _status_kb(karpy.proc.pid)
        samples = karpy.metrics()
        result: JSON = {
            "provider": provider,
            "pods": PODS,
            "nodeclaims": claims,
            "seconds": round(seconds, 1),
            "rssMB": round(memory["VmRSS"], 1),
            "peakRssMB": round(memory["VmHWM"], 1),
            "idleRssMB": round(idle["VmRSS"], 1),
            "cloudproviderCalls": _by_method(
                samples, "karpy_cloudprovider_calls_total", "method", "outcome"
            ),
            "cloudproviderSeconds": _by_method(
                samples, "karpenter_cloudprovider_duration_seconds_sum", "method"
            ),
            "loadAverage": {
                "before": [round(x, 1) for x in load_before],
                "after": [round(x, 1) for x in os.getloadavg()],
            },
        }
        if provider == "aws":
            result["awsCalls"] = moto_calls(recording)
        return result
    finally:
        if karpy is not None:
            karpy.stop()
        if moto is not None:
            moto.terminate()
            moto.wait(timeout=30)
        cp.stop()


def whole_system() -> JSON:
    """Both providers, one after the other, and the RSS difference against the 150 MB target."""
    keep = os.environ.get("BENCH_WORK_DIR")
    with tempfile.TemporaryDirectory(prefix="karpy-bench-aws-") as tmp:
        base = Path(keep) if keep else Path(tmp)
        (base / "aws").mkdir(parents=True, exist_ok=True)
        (base / "kwok").mkdir(parents=True, exist_ok=True)
        aws = _run("aws", base / "aws")
        kwok = _run("kwok", base / "kwok")
    return {
        "case": "karpy-run",
        "pods": PODS,
        "aws": aws,
        "kwok": kwok,
        "rssAboveKwokMB": round(aws["rssMB"] - kwok["rssMB"], 1),
        "peakRssAboveKwokMB": round(aws["peakRssMB"] - kwok["peakRssMB"], 1),
        "targets": {"rssAboveKwokMB": 150},
    }
