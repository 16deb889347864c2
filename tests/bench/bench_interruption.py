"""Interruption benchmark: 100 spot interruption warnings for 100 spot nodes at once.

A private control plane, a moto server (EC2, IAM, SSM, SQS) seeded by `hack/aws/moto_seed.py`,
and `karpy run` with PROVIDER=aws and INTERRUPTION_QUEUE. A Deployment of 100 pods that may not
share a host (required hostname anti-affinity) brings up 100 spot NodeClaims; the stand-in
kubelets of `tests.e2e.aws_kubelets` register their Nodes and run the pods. Then one warning per
instance is queued (10 SendMessageBatch calls). Reported:

- `seconds`: from the messages being queued to all 100 pods Running and Ready on other nodes
  (target <= 60 s on 2 cores; the warning gives 120 s);
- `drainedSeconds`: until the queue shows 0 visible and 0 in-flight messages;
- `deletingSeconds`: until every interrupted NodeClaim is being deleted (the reconciler's own
  share; the rest is draining, launching the replacements and their kubelets);
- `interruptedGoneSeconds`: until every interrupted NodeClaim is gone (drained and terminated);
- `reusedOffering`: replacement NodeClaims on an offering (type, zone) that was interrupted
  (should be 0: each interruption marks its spot offering unavailable for 3 minutes);
- `launchSeconds`: how long the first 100 nodes took (setup, not the measure);
- `timeline`: each phase after the messages were queued ({n, first, p50, last} seconds): the
  deletions the reconciler initiated, the Nodes tainted, the replacement pods created (their old
  pod was evicted), each provisioning batch, the NodeClaims created, the instances launched
  (CreateFleet answered), the Nodes registered and the replacement pods Ready;
- `awsCalls`: what moto received during the measure, by service:Action (moto's recorder,
  started when the messages are queued; the bench's own SQS calls included);
- `apiRequests`: the API server's requests during the measure by verb and resource/subresource
  and, when not 2xx, code (its `apiserver_request_total`; the 20 most frequent), to see what
  keeps it busy.

Bench set-up, not karpy: moto's server runs in a process of its own (it shared this process's
interpreter lock with the stand-in kubelets and the probes); it does the same work. `setup` in
the JSON says so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "hack") not in sys.path:
    sys.path.insert(0, str(REPO / "hack"))

import boto3  # noqa: E402
import controlplane  # noqa: E402
from kubetest import Kubectl  # noqa: E402

from tests.bench.aws_system import moto_calls  # noqa: E402
from tests.bench.awsstack import (  # noqa: E402
    CREDENTIALS,
    REGION,
    aws_settings,
    control_plane,
    seed_moto,
    start_moto,
)
from tests.bench.timeline import condition_time, log_events, phase, stamp  # noqa: E402
from tests.e2e.aws_kubelets import Kubelets  # noqa: E402
from tests.e2e.karpy_process import KarpyProcess  # noqa: E402
from tests.e2e.support import deployment  # noqa: E402
from tests.e2e.test_aws_interruption import NODEPOOL, instance_of, offering  # noqa: E402
from tests.kit.interruption import body, spot_interruption  # noqa: E402

NAMESPACE = "bench"
NODES = 100
QUEUE = "bench"
TIMEOUT = 600.0
POLL = 0.5
"""Seconds between probes. They read the stand-in kubelets' watches (kubectl listings every
half second took 15 s of CPU, plus the API server's, from the 2 cores karpy needs)."""
"""moto's instances never carry the launch template's security groups (see the docstring)."""

JSON = dict[str, Any]


def _ready_pods(kubectl: Kubectl) -> list[JSON]:
    return _ready(kubectl.json("get", "pods", "-n", NAMESPACE)["items"])


def _ready(items: list[JSON]) -> list[JSON]:
    return [
        p
        for p in items
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (p.get("status") or {}).get("conditions") or ()
        )
    ]


def _launched(kubectl: Kubectl) -> list[JSON]:
    claims: list[JSON] = kubectl.json("get", "nodeclaims")["items"]
    return [
        c for c in claims if str((c.get("status") or {}).get("providerID", "")).startswith("aws")
    ]


def _wait(predicate: Any, what: str, timeout: float = TIMEOUT) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.5)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


class _ProfiledKarpy(KarpyProcess):
    """`karpy run` under cProfile (BENCH_PROFILE=<file>): profiled only during the measure."""

    def entry_module(self) -> str:
        return "tests.bench.profiled_karpy"

    def signal(self, sig: int) -> None:
        if self.proc is not None:
            self.proc.send_signal(sig)


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu(
    cp: controlplane.ControlPlane, karpy: KarpyProcess, moto: subprocess.Popen[bytes]
) -> dict[str, float]:
    """CPU seconds so far of karpy, each control-plane process, moto and this process (the
    stand-in kubelets and the probes): where the 2 cores went during the measure."""
    out = {name: _process_cpu(pid) for name, pid in cp.pids().items()}
    if karpy.proc is not None:
        out["karpy"] = _process_cpu(karpy.proc.pid)
    times = os.times()
    out["moto"] = _process_cpu(moto.pid)
    out["bench (kubelets, probes)"] = times.user + times.system
    out["kubectl probes"] = times.children_user + times.children_system
    return out


def _api_requests(kubectl: Kubectl) -> dict[str, float]:
    """`apiserver_request_total` summed by (client, verb, resource), from the server's metrics."""
    out: dict[str, float] = {}
    for line in kubectl("get", "--raw", "/metrics").stdout.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels, value = line[len("apiserver_request_total{") :].rsplit("} ", 1)
        fields = dict(
            part.split("=", 1) for part in labels.replace('"', "").split(",") if "=" in part
        )
        key = f"{fields.get('verb')} {fields.get('resource')}/{fields.get('subresource', '')}"
        if not fields.get("code", "200").startswith("2"):
            key += f" {fields.get('code')}"
        out[key] = out.get(key, 0.0) + float(value)
    return out


def _busiest(before: dict[str, float], after: dict[str, float], top: int = 20) -> dict[str, int]:
    grown = {k: v - before.get(k, 0.0) for k, v in after.items()}
    ranked = sorted(grown.items(), key=lambda kv: -kv[1])[:top]
    return {k: int(v) for k, v in ranked if v > 0}


def _timeline(kubectl: Kubectl, karpy: KarpyProcess, start: float, old: set[str]) -> JSON:
    """Per phase after `start` (wall clock): karpy's log lines and the replacement pods."""
    events = log_events(karpy.log_text().splitlines())

    def logged(message: str) -> JSON:
        return phase([t for t, _ in events.get(message, ())], start)

    pods = [
        p
        for p in kubectl.json("get", "pods", "-n", NAMESPACE)["items"]
        if p["metadata"]["uid"] not in old
    ]
    batches = [
        {"at": round(t - start, 1), "nodeclaims": e.get("nodeclaims"), "pods": e.get("pods")}
        for t, e in events.get("computed new nodeclaim(s) to fit pod(s)", ())
        if t >= start
    ]
    return {
        "nodeclaimsDeleting": logged("initiating delete from interruption message"),
        "nodesTainted": logged("tainted node"),
        "podsReplaced": phase([stamp(p["metadata"].get("creationTimestamp")) for p in pods], start),
        "batchesOpened": logged("found provisionable pod(s)"),
        "batches": batches,
        "nodeclaimsCreated": logged("created nodeclaim"),
        "instancesLaunched": logged("launched instance"),
        "nodesRegistered": logged("registered nodeclaim"),
        "nodesInitialized": logged("initialized nodeclaim"),
        "podsReady": phase([condition_time(p, "Ready") for p in pods], start),
        "waitingOnSync": logged("waiting on cluster sync"),
    }


def run(work_dir: Path) -> dict[str, Any]:
    cp, kubectl = control_plane(work_dir, NAMESPACE)
    recording = work_dir / "moto-calls.jsonl"
    moto, endpoint = start_moto(work_dir, {"MOTO_RECORDER_FILEPATH": str(recording)})
    karpy: KarpyProcess | None = None
    try:
        ami = seed_moto(endpoint)
        lower = {k.lower(): v for k, v in CREDENTIALS.items()}
        sqs = boto3.client("sqs", endpoint_url=endpoint, region_name=REGION, **lower)
        url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
        profile = os.environ.get("BENCH_PROFILE")
        karpy = (_ProfiledKarpy if profile else KarpyProcess)(
            kubeconfig=str(cp.kubeconfig),
            log_path=work_dir / "karpy.log",
            settings={
                "LOG_LEVEL": "info",
                **aws_settings(endpoint),
                "INTERRUPTION_QUEUE": QUEUE,
                **({"BENCH_PROFILE_OUT": profile} if profile else {}),
            },
        ).start()
        karpy.wait_ready()
        nodeclass = (REPO / "hack/aws/moto-ec2nodeclass.yaml").read_text()
        kubectl.apply(nodeclass.replace("AMI_ID", ami))
        kubectl.apply(NODEPOOL)
        spread = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "spread"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
        workload = deployment(
            "spread", NAMESPACE, replicas=NODES, cpu="100m", memory="128Mi", affinity=spread
        )
        with Kubelets(str(cp.kubeconfig)) as kubelets:
            kubectl.apply(workload)
            launch = _wait(lambda: len(_ready_pods(kubectl)) >= NODES, f"{NODES} pods Ready")
            pods = _ready_pods(kubectl)
            interrupted_nodes = {p["spec"]["nodeName"] for p in pods}
            claims = _launched(kubectl)
            interrupted = {c["metadata"]["name"]: c for c in claims}
            instances = [instance_of(c) for c in claims]
            entries = [
                {"Id": str(i), "MessageBody": body(spot_interruption(instance))}
                for i, instance in enumerate(instances)
            ]
            if isinstance(karpy, _ProfiledKarpy):
                karpy.signal(signal.SIGUSR1)
            record = urllib.request.Request(
                f"{endpoint}/moto-api/recorder/start-recording", method="POST"
            )
            urllib.request.urlopen(record, timeout=10).close()
            api_before = _api_requests(kubectl)
            cpu_before = _cpu(cp, karpy, moto)
            load_before = os.getloadavg()
            started = time.monotonic()
            started_wall = time.time()
            for i in range(0, len(entries), 10):
                sqs.send_message_batch(QueueUrl=url, Entries=entries[i : i + 10])
            queued = time.monotonic() - started
            drained: float | None = None
            gone: float | None = None
            moved: float | None = None
            deleting: float | None = None
            while time.monotonic() - started < TIMEOUT and None in (drained, gone, moved):
                now = time.monotonic() - started
                if deleting is None or gone is None:  # one listing serves both
                    claims_now = kubelets.listed("nodeclaims")
                    names = {c["metadata"]["name"] for c in claims_now}
                    live = {
                        c["metadata"]["name"]
                        for c in claims_now
                        if not c["metadata"].get("deletionTimestamp")
                    }
                    if deleting is None and not live & set(interrupted):
                        deleting = now
                    if gone is None and not names & set(interrupted):
                        gone = now
                if drained is None:
                    attrs = sqs.get_queue_attributes(
                        QueueUrl=url,
                        AttributeNames=[
                            "ApproximateNumberOfMessages",
                            "ApproximateNumberOfMessagesNotVisible",
                        ],
                    )["Attributes"]
                    if set(attrs.values()) == {"0"}:
                        drained = now
                if moved is None:
                    ready = _ready(
                        [
                            p
                            for p in kubelets.listed("pods")
                            if p["metadata"].get("namespace") == NAMESPACE
                        ]
                    )
                    elsewhere = [p for p in ready if p["spec"]["nodeName"] not in interrupted_nodes]
                    if len(elsewhere) >= NODES:
                        moved = now
                time.sleep(POLL)
            cpu = {
                k: round(v - cpu_before.get(k, 0.0), 1) for k, v in _cpu(cp, karpy, moto).items()
            }
            api = _busiest(api_before, _api_requests(kubectl))
            if isinstance(karpy, _ProfiledKarpy):
                karpy.signal(signal.SIGUSR2)
            load_after = os.getloadavg()
            replacements = [
                c for c in _launched(kubectl) if c["metadata"]["name"] not in interrupted
            ]
            bad = {offering(c) for c in interrupted.values()}
            reused = sum(1 for c in replacements if offering(c) in bad)
            errors = list(kubelets.errors)
            timeline = _timeline(
                kubectl, karpy, started_wall, set(p["metadata"]["uid"] for p in pods)
            )
        return {
            "case": f"spot-{NODES}",
            "nodes": NODES,
            "messages": len(entries),
            "queueSeconds": round(queued, 2),
            "seconds": round(moved, 2) if moved is not None else None,
            "drainedSeconds": round(drained, 2) if drained is not None else None,
            "deletingSeconds": round(deleting, 2) if deleting is not None else None,
            "interruptedGoneSeconds": round(gone, 2) if gone is not None else None,
            "replacements": len(replacements),
            "reusedOffering": reused,
            "interruptedOfferings": sorted(f"{t}/{z}" for t, z in bad),
            "launchSeconds": round(launch, 2),
            "kubeletErrors": len(errors),
            "handled": len(karpy.log_lines("initiating delete from interruption message")),
            "timeline": timeline,
            "cpuSeconds": cpu,
            "awsCalls": moto_calls(recording),
            "apiRequests": api,
            "loadAverage": {
                "before": [round(x, 1) for x in load_before],
                "after": [round(x, 1) for x in load_after],
            },
            "setup": {
                "moto": "own process (python -m moto.server)",
            },
            "targets": {"seconds": 60, "reusedOffering": 0},
        }
    finally:
        if karpy is not None:
            karpy.stop()
        moto.terminate()
        moto.wait(timeout=30)
        cp.stop()


def cases() -> Iterator[dict[str, Any]]:
    keep = os.environ.get("BENCH_WORK_DIR")  # keeps karpy's log for a look afterwards
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield run(Path(keep))
        return
    with tempfile.TemporaryDirectory(prefix="karpy-bench-interruption-") as tmp:
        yield run(Path(tmp))


if __name__ == "__main__":
    for result in cases():
        print(json.dumps({"bench": "interruption", **result}), flush=True)
