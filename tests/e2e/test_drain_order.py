"""End to end: a node is drained in Karpenter's four waves, each once the one before is gone.

Karpenter's drain-order scenario on a `karpy run` (kwok provider): one node runs six pods, each
with `terminationGracePeriodSeconds: 35` and a 35 s preStop sleep — a plain Deployment pod, a
plain DaemonSet pod, and a Deployment pod and a DaemonSet pod of each of the priority classes
`system-node-critical` and `system-cluster-critical`. The kwok simulator keeps a deleted pod
Terminating for its grace period, as a kubelet does. Deleting the node's NodeClaim must evict
the waves in order (non-critical workloads, non-critical DaemonSet pods, critical workloads,
critical DaemonSet pods), a wave only once every pod of the one before has left the node, so
each wave stays untouched (no deletionTimestamp) for at least 30 s while the one before it
terminates; at the end every pod, the Node and the NodeClaim are gone. A seventh pod tolerates
`karpenter.sh/disrupted`: as Karpenter, the drain neither evicts it nor waits for it.

One background poll of the namespace's pods records, for every pod of the node, when it was
last seen, and the API server's record of when its deletion was requested (deletionTimestamp
less deletionGracePeriodSeconds); the test checks those records once, so it lasts the four
grace periods and no more. The NodePool's CPU limit allows one node, so the evicted workloads'
replacements stay pending rather than launching nodes the test does not need.

Karpenter's scenario uses a 60 s grace and asks for 30 s untouched. The test keeps Karpenter's
30 s criterion but shortens the grace to 35 s (four waves cost 140 s rather than 240 s): a wave
evicted together with the one before it would be touched within a second or two, and the 5 s
margin leaves room for a slow poll on a loaded machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import pytest
from kubetest import Kubectl

from karpy.apis.objects import parse_time
from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import nodeclaims, nodes, pods, wait_for
from tests.kit import LINUX_AMD64_ON_DEMAND

pytestmark = pytest.mark.timeout(900)
JSON = dict[str, Any]
POOL = "drain-order"
TYPE = "c-2x-amd64-linux"
GRACE = 35
UNTOUCHED = 30.0
"""How long each wave must stay untouched while the one before it terminates."""
TIMESTAMP_RESOLUTION = 1.0
"""deletionTimestamp is written in whole seconds."""

NODE_CRITICAL = "system-node-critical"
CLUSTER_CRITICAL = "system-cluster-critical"
WAVES: list[list[str]] = [
    ["plain"],
    ["plain-ds"],
    ["node-critical", "cluster-critical"],
    ["node-critical-ds", "cluster-critical-ds"],
]
"""Karpenter's drain order, by workload name."""
TOLERANT = "tolerant"
"""Tolerates the disrupted taint: in no wave."""


def _pod_spec(priority_class: str | None) -> JSON:
    spec: JSON = {
        "terminationGracePeriodSeconds": GRACE,
        "nodeSelector": {"karpenter.sh/nodepool": POOL},
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "lifecycle": {"preStop": {"exec": {"command": ["sleep", str(GRACE)]}}},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return spec


def _workload(kind: str, name: str, namespace: str, priority_class: str | None) -> JSON:
    spec: JSON = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name, "drain-order": "yes"}},
            "spec": _pod_spec(priority_class),
        },
    }
    if kind == "Deployment":
        spec["replicas"] = 1
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _workloads(namespace: str) -> list[JSON]:
    tolerant = _workload("Deployment", TOLERANT, namespace, None)
    tolerant["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "karpenter.sh/disrupted", "operator": "Exists"}
    ]
    out: list[JSON] = [tolerant]
    for prefix, priority_class in (
        ("plain", None),
        ("node-critical", NODE_CRITICAL),
        ("cluster-critical", CLUSTER_CRITICAL),
    ):
        out.append(_workload("Deployment", prefix, namespace, priority_class))
        out.append(_workload("DaemonSet", f"{prefix}-ds", namespace, priority_class))
    return out


@dataclass
class Record:
    """What the poll saw of one pod of the drained node."""

    workload: str
    last_seen: float = 0.0
    """Wall time at which a poll that still listed the pod started."""
    requested: float | None = None
    """When its deletion was requested, by the API server's clock (whole seconds)."""
    gone: bool = False


@dataclass
class Drain:
    node: str
    records: dict[str, Record] = field(default_factory=dict)
    """By pod UID."""

    def observe(self, started: float, listed: list[JSON]) -> None:
        present = set()
        for p in listed:
            meta = p["metadata"]
            if p["spec"].get("nodeName") != self.node:
                continue
            uid = meta["uid"]
            present.add(uid)
            record = self.records.setdefault(uid, Record(workload=meta["labels"]["app"]))
            record.last_seen = started
            deleting = parse_time(meta.get("deletionTimestamp"))
            if deleting is not None and record.requested is None:
                grace = int(meta.get("deletionGracePeriodSeconds") or 0)
                record.requested = deleting.timestamp() - grace
        for uid, record in self.records.items():
            record.gone = uid not in present

    def wave(self, names: list[str]) -> list[Record]:
        return [r for r in self.records.values() if r.workload in names]


@contextmanager
def watching(kubectl: Kubectl, namespace: str, drain: Drain) -> Iterator[None]:
    """Poll the namespace's pods about once a second until the block ends."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            started = time.time()
            with suppress(Exception):  # a failed poll is just a missing sample
                drain.observe(started, pods(kubectl, namespace, "drain-order=yes"))
            stop.wait(1.0)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(15)


def test_a_node_is_drained_wave_by_wave_each_once_the_one_before_is_gone(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool(
        POOL,
        requirements=[
            *LINUX_AMD64_ON_DEMAND,
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [TYPE]},
        ],
        limits={"cpu": "2"},
    )
    for workload in _workloads(namespace):
        kubectl.apply(workload)

    def all_seven_running() -> list[JSON] | None:
        found = [
            p
            for p in pods(kubectl, namespace, "drain-order=yes")
            if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") == "Running"
        ]
        return found if len(found) == 7 else None

    running: list[JSON] = wait_for(all_seven_running, timeout=240, message="seven pods running")
    (node,) = {p["spec"]["nodeName"] for p in running}
    provider_id = kubectl.json("get", "node", node)["spec"]["providerID"]
    (claim,) = [c for c in nodeclaims(kubectl) if c["status"].get("providerID") == provider_id]
    claim_name = claim["metadata"]["name"]
    drain = Drain(node=node)

    with watching(kubectl, namespace, drain):
        wait_for(lambda: len(drain.records) == 7, timeout=30, message="the poll sees 7 pods")
        kubectl("delete", "nodeclaim", claim_name, "--wait=false")

        def finished() -> bool:
            return (
                all(r.gone for r in drain.records.values() if r.workload != TOLERANT)
                and claim_name not in {c["metadata"]["name"] for c in nodeclaims(kubectl)}
                and node not in {n["metadata"]["name"] for n in nodes(kubectl, None)}
            )

        wait_for(finished, timeout=4 * GRACE + 240, message="the drain and the node's removal")

    report = {r.workload: (r.requested, r.last_seen, r.gone) for r in drain.records.values()}
    assert sorted(r.workload for r in drain.records.values()) == sorted(
        [TOLERANT, *(name for wave in WAVES for name in wave)]
    ), report
    for record in drain.records.values():
        if record.workload == TOLERANT:
            assert record.requested is None, f"the tolerant pod was evicted: {report}"
        else:
            assert record.requested is not None, f"{record.workload} never evicted: {report}"
    for before, after in pairwise(WAVES):
        earlier, later = drain.wave(before), drain.wave(after)
        first_later = min(r.requested or 0.0 for r in later)
        # the later wave is evicted only after every pod of the earlier one has left the node
        for r in earlier:
            assert first_later + TIMESTAMP_RESOLUTION >= r.last_seen, (
                f"{after} evicted while {r.workload} was still on the node: {report}"
            )
        # and it stayed untouched for at least UNTOUCHED s while the earlier wave terminated
        last_earlier = max(r.requested or 0.0 for r in earlier)
        assert first_later - last_earlier >= UNTOUCHED - TIMESTAMP_RESOLUTION, (
            f"{after} touched {first_later - last_earlier:.0f} s after {before}: {report}"
        )
