"""Informer ingest on a real apiserver: 20,000 Deployment-style pods.

Cases (one JSON line each):

- `list-sync-trimmed`: a fresh pod informer with the default trim lists and syncs all pods;
  `seconds`, `podsPerSecond`, resident memory per cached pod (`bytesPerPod`: the deep size of the
  cache; `rssBytesPerPod`: growth of the process's resident set), target <= 4 KiB per pod.
- `list-sync-untrimmed`: the same without trimming, over one namespace (a tenth of the pods),
  for comparison.
- `watch-replay`: a watch from resourceVersion 0 streams every pod as an event through the
  informer into an enqueuing handler; `eventsPerSecond` (target >= 2,000/s) with the apiserver
  on the same cores.
- `watch-live`: pods patched concurrently while the informer watches; `eventsPerSecond` is
  bounded by how fast the apiserver accepts writes on this machine.

`BENCH_PODS` overrides the pod count (default 20000); `BENCH_PAGE_SIZE` the list page size
(default: the cache's).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.controller import EnqueueHandler
from karpy.kube.informer import HandlerFuncs, Informer
from karpy.kube.memory import release_free_memory
from karpy.kube.resources import NAMESPACES, PODS, object_key
from karpy.kube.workqueue import RateLimitingQueue

JSON = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]
NAMESPACE_COUNT = 10
STATUS_EVERY = int(os.environ.get("BENCH_STATUS_EVERY", "10"))
PAGE_SIZE = int(os.environ.get("BENCH_PAGE_SIZE", "0"))  # 0: the cache's default


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def deep_size(objects: list[Any]) -> int:
    """Bytes held by `objects` and everything they reference, each object counted once."""
    seen: set[int] = set()
    total = 0
    stack: list[Any] = list(objects)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple):
            stack.extend(obj)
    return total


def _container(name: str, image: str, cpu: str, memory: str, port: int) -> JSON:
    probe = {
        "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
        "initialDelaySeconds": 10,
        "periodSeconds": 10,
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    return {
        "name": name,
        "image": f"registry.example.com/{image}:1.27.3",
        "command": ["/usr/local/bin/" + name],
        "args": ["--config=/etc/app/config.yaml", "--log-level=info", f"--port={port}"],
        "env": [{"name": f"ENV_{i}", "value": f"value-{i}-{name}"} for i in range(8)]
        + [
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
            {
                "name": "POD_IP",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
            },
        ],
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"cpu": cpu, "memory": memory},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": True},
            {"name": "data", "mountPath": "/var/lib/app"},
            {
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            },
        ],
        "livenessProbe": probe,
        "readinessProbe": {**probe, "httpGet": {**probe["httpGet"], "path": "/ready"}},
        "startupProbe": {**probe, "failureThreshold": 30},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }


def pod_manifest(index: int, *, namespace: str = "default", deployment: str = "web") -> JSON:
    """A Deployment pod as a controller would create it (no server-set fields)."""
    template_hash = "5d8f7c9b4"
    labels = {
        "app": deployment,
        "app.kubernetes.io/name": deployment,
        "app.kubernetes.io/part-of": "shop",
        "pod-template-hash": template_hash,
        "tier": "frontend",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{deployment}-{template_hash}-{index:06d}",
            "generateName": f"{deployment}-{template_hash}-",
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "checksum/config": "3f9a1c0e8b7d6a5f4e3d2c1b0a9f8e7d" * 2,
                "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{deployment}-{template_hash}",
                    "uid": "8c1b7a52-4a3e-4bd5-9a0e-6f5d3c2b1a09",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "volumes": [
                {
                    "name": "config",
                    "configMap": {"name": f"{deployment}-config", "defaultMode": 420},
                },
                {
                    "name": "data",
                    "persistentVolumeClaim": {"claimName": f"data-{deployment}-{index}"},
                },
                {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
            "initContainers": [
                {
                    k: v
                    for k, v in _container("migrate", "migrate", "100m", "64Mi", 8079).items()
                    if not k.endswith("Probe")
                }
            ],
            "containers": [
                _container("app", deployment, "500m", "512Mi", 8080),
                _container("proxy", "envoy", "100m", "128Mi", 15001),
                _container("log-shipper", "fluent-bit", "50m", "64Mi", 2020),
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"node-{index % 200:03d}",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "securityContext": {"fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
            "schedulerName": "bench-no-scheduler",
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "karpenter.sh/capacity-type",
                                        "operator": "In",
                                        "values": ["on-demand", "spot"],
                                    }
                                ]
                            }
                        ]
                    }
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": deployment}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                },
            },
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "shop", "effect": "NoSchedule"},
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": deployment}},
                }
            ],
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
        },
    }


def pod_status(index: int) -> JSON:
    """A Running pod's status as a kubelet reports it."""
    stamp = f"2026-01-01T00:00:{index % 60:02d}Z"
    return {
        "phase": "Running",
        "conditions": [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
            for t in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            )
        ],
        "hostIP": f"10.0.{index % 200}.{index % 250}",
        "hostIPs": [{"ip": f"10.0.{index % 200}.{index % 250}"}],
        "podIP": f"10.1.{index // 250 % 250}.{index % 250}",
        "podIPs": [{"ip": f"10.1.{index // 250 % 250}.{index % 250}"}],
        "startTime": stamp,
        "containerStatuses": [
            {
                "name": name,
                "state": {"running": {"startedAt": stamp}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": f"registry.example.com/{name}:1.27.3",
                "imageID": f"registry.example.com/{name}@sha256:" + "ab" * 32,
                "containerID": "containerd://" + uuid.UUID(int=index * 7 + i).hex * 2,
                "started": True,
            }
            for i, name in enumerate(("app", "proxy", "log-shipper"))
        ],
        "qosClass": "Guaranteed",
    }


def realistic_pod(index: int, *, namespace: str = "default", deployment: str = "web") -> JSON:
    """A pod as a watch delivers it: manifest plus uid, version, managedFields and status."""
    pod = pod_manifest(index, namespace=namespace, deployment=deployment)
    meta = pod["metadata"]
    meta["uid"] = str(uuid.UUID(int=index + 1))
    meta["resourceVersion"] = str(1000 + index)
    meta["creationTimestamp"] = "2026-01-01T00:00:00Z"
    meta["managedFields"] = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {f"f:{k}": {} for k in meta["labels"]}},
                "f:spec": {
                    "f:containers": {
                        f'k:{{"name":"{c["name"]}"}}': {f"f:{k}": {} for k in c}
                        for c in pod["spec"]["containers"]
                    }
                },
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:05Z",
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {
                        f'k:{{"type":"{t}"}}': {".": {}, "f:status": {}}
                        for t in ("Ready", "ContainersReady")
                    },
                    "f:containerStatuses": {},
                    "f:podIP": {},
                }
            },
        },
    ]
    pod["status"] = pod_status(index)
    return pod


# -- running against a control plane ------------------------------------------------------------


async def _populate(client: Client, count: int) -> float:
    """Create `count` pods across namespaces (every STATUS_EVERY-th with a kubelet status)."""
    started = time.perf_counter()
    for n in range(NAMESPACE_COUNT):
        await client.create(NAMESPACES, {"metadata": {"name": f"bench-{n}"}})
    semaphore = asyncio.Semaphore(48)

    async def one(i: int) -> None:
        async with semaphore:
            namespace = f"bench-{i % NAMESPACE_COUNT}"
            deployment = f"app{i % 40}"
            manifest = pod_manifest(i, namespace=namespace, deployment=deployment)
            await client.create(PODS, manifest, field_manager="kube-controller-manager")
            if i % STATUS_EVERY == 0:  # a kubelet-style status on a sample (writes are slow here)
                await client.patch_status(
                    PODS,
                    manifest["metadata"]["name"],
                    {"status": pod_status(i)},
                    namespace=namespace,
                    field_manager="kubelet",
                )

    await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - started


async def _sync(
    client: Client, *, trimmed: bool, namespace: str | None = None
) -> tuple[Informer, float, int]:
    gc.collect()
    release_free_memory()  # the informer trims the heap after its list: start from a trimmed one
    rss_before = _rss_bytes()
    cache = Cache(
        client,
        transforms=None if trimmed else {PODS: None},
        default_transform=None,
        **({"page_size": PAGE_SIZE} if PAGE_SIZE else {}),
    )
    informer = cache.informer(PODS, namespace=namespace)
    stop = asyncio.Event()
    started = time.perf_counter()
    runner = asyncio.create_task(cache.start(stop))
    await cache.wait_for_sync()
    seconds = time.perf_counter() - started
    stop.set()
    await runner
    gc.collect()
    return informer, seconds, _rss_bytes() - rss_before


def _base(case: str, pods: int, seconds: float) -> JSON:
    return {
        "case": case,
        "pods": pods,
        "nodes": 0,
        "seconds": round(seconds, 3),
        "podsPerSecond": round(pods / seconds, 1) if seconds else None,
        "cost": None,
        "lowerBound": None,
        "ratio": None,
    }


def _sync_in_fresh_process(kubeconfig: str, *, trimmed: bool, namespace: str | None) -> JSON:
    """Run one list-and-sync in a new interpreter, so its resident-memory growth is not
    blurred by the population step's garbage."""
    args = [sys.executable, "-m", "tests.bench.bench_informer", "sync", kubeconfig]
    args += ["trimmed" if trimmed else "raw", namespace or ""]
    out = subprocess.run(
        args, capture_output=True, text=True, check=True, cwd=REPO, timeout=900
    ).stdout
    result: JSON = json.loads(out.strip().splitlines()[-1])
    return result


async def _measure_sync(kubeconfig: str, *, trimmed: bool, namespace: str | None) -> JSON:
    client = await Client.connect(kubeconfig=kubeconfig, qps=0, burst=0)
    try:
        await client.list(NAMESPACES)  # warm the connection before the baseline
        informer, seconds, rss_growth = await _sync(client, trimmed=trimmed, namespace=namespace)
        objects = informer.list()
        return {
            "pods": len(objects),
            "seconds": seconds,
            "bytesPerPod": round(deep_size(objects) / len(objects)),
            "rssBytesPerPod": round(rss_growth / len(objects)),
            "peakRssMB": round(_peak_rss_mb(), 1),
        }
    finally:
        await client.close()


async def _run_cases(kubeconfig: str, count: int) -> list[JSON]:
    results: list[JSON] = []
    client = await Client.connect(kubeconfig=kubeconfig, qps=0, burst=0)
    try:
        populate_seconds = await _populate(client, count)
        for trimmed in (True, False):
            # the untrimmed figure comes from one namespace (a tenth): a full untrimmed
            # cache of 20,000 pods needs several GB
            namespace = None if trimmed else "bench-0"
            measured = await asyncio.to_thread(
                _sync_in_fresh_process, kubeconfig, trimmed=trimmed, namespace=namespace
            )
            case = "list-sync-trimmed" if trimmed else "list-sync-untrimmed"
            result = _base(case, measured["pods"], measured["seconds"])
            result.update(
                bytesPerPod=measured["bytesPerPod"],
                rssBytesPerPod=measured["rssBytesPerPod"],
                targetBytesPerPod=4096 if trimmed else None,
                populateSeconds=round(populate_seconds, 1),
                peakRssMB=measured["peakRssMB"],
            )
            results.append(result)
        results.append(await _watch_replay(client, count))
        results.append(await _watch_live(client, min(count, 2000)))
    finally:
        await client.close()
    return results


async def _watch_replay(client: Client, count: int) -> JSON:
    """Every cached pod streamed as an ADDED event (watch from resourceVersion 0)."""
    cache = Cache(client)
    informer = cache.informer(PODS)
    queue: RateLimitingQueue[str] = RateLimitingQueue()
    informer.add_handler(EnqueueHandler(queue, mapper=object_key))
    done = asyncio.Event()
    informer.add_handler(HandlerFuncs(add=lambda _: done.set() if len(queue) >= count else None))
    informer.reflector.resource_version = "0"  # skip the list: watch from the beginning
    stop = asyncio.Event()
    started = time.perf_counter()
    runner = asyncio.create_task(cache.start(stop))
    await done.wait()
    seconds = time.perf_counter() - started
    stop.set()
    await runner
    result = _base("watch-replay", count, seconds)
    result.update(
        eventsPerSecond=round(count / seconds),
        targetEventsPerSecond=2000,
        peakRssMB=round(_peak_rss_mb(), 1),
    )
    return result


async def _watch_live(client: Client, count: int) -> JSON:
    """Pods patched concurrently while an informer with an enqueuing handler watches."""
    cache = Cache(client)
    informer = cache.informer(PODS)
    stop = asyncio.Event()
    runner = asyncio.create_task(cache.start(stop))
    await cache.wait_for_sync()
    seen = 0
    targets = informer.list()[:count]
    all_seen = asyncio.Event()

    def count_event(old: JSON, new: JSON) -> None:
        nonlocal seen
        if (new["metadata"].get("labels") or {}).get("bench-round") == "1":
            seen += 1
            if seen >= len(targets):
                all_seen.set()

    queue: RateLimitingQueue[str] = RateLimitingQueue()
    informer.add_handler(EnqueueHandler(queue, mapper=object_key))
    informer.add_handler(HandlerFuncs(update=count_event))
    semaphore = asyncio.Semaphore(48)

    async def bump(pod: JSON) -> None:
        async with semaphore:
            meta = pod["metadata"]
            await client.patch(
                PODS,
                meta["name"],
                {"metadata": {"labels": {"bench-round": "1"}}},
                namespace=meta["namespace"],
            )

    started = time.perf_counter()
    await asyncio.gather(*(bump(p) for p in targets))
    await all_seen.wait()
    seconds = time.perf_counter() - started
    stop.set()
    await runner
    result = _base("watch-live", len(targets), seconds)
    result.update(eventsPerSecond=round(len(targets) / seconds), peakRssMB=round(_peak_rss_mb(), 1))
    return result


def cases() -> Iterator[JSON]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
    import controlplane
    import uvloop

    count = int(os.environ.get("BENCH_PODS", "20000"))
    with tempfile.TemporaryDirectory(prefix="karpy-bench-informer-") as work:
        plane = controlplane.ControlPlane(
            Path(work),
            bin_dir=controlplane.ensure_binaries(),
            controllers=("namespace-controller",),
        )
        plane.start()
        try:
            results = uvloop.run(_run_cases(str(plane.kubeconfig), count))
        finally:
            plane.stop()
    yield from results


if __name__ == "__main__":  # the fresh-process half of the list-and-sync cases
    import uvloop

    _, mode, config, kind, ns = sys.argv
    assert mode == "sync"
    figures = uvloop.run(_measure_sync(config, trimmed=kind == "trimmed", namespace=ns or None))
    print(json.dumps(figures))
