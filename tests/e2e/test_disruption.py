"""End to end: empty nodes are removed after consolidateAfter within the NodePool's budget, a
node annotated `karpenter.sh/do-not-disrupt` stays, and a NodePool whose NodeClass does not
exist is not Ready, says why, and launches nothing (real `karpy run`, kwok provider)."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from kubetest import Kubectl

from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess, cloudprovider_calls
from tests.e2e.support import (
    condition,
    deployment,
    nodeclaims,
    nodepool,
    nodes,
    pods,
    scale,
    wait_bound,
    wait_for,
)

POOL = "empty"
APP = "spread"
ONE_PER_NODE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": APP}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
_COUNT = re.compile(r"disrupted-node-count\"?\s*[:=]\s*(\d+)")


class DeletionWatcher:
    """Polls NodeClaims in the background and records the largest number seen deleting at once
    and the order in which NodeClaims started deleting."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.kubectl = kubectl
        self.max_deleting = 0
        self.order: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DeletionWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                claims = nodeclaims(self.kubectl)
            except Exception:  # a transient kubectl failure is not a finding
                time.sleep(0.2)
                continue
            deleting = [
                c["metadata"]["name"] for c in claims if c["metadata"].get("deletionTimestamp")
            ]
            self.max_deleting = max(self.max_deleting, len(deleting))
            for name in deleting:
                if name not in self.order:
                    self.order.append(name)
            time.sleep(0.2)


def _pool_nodes(kubectl: Kubectl) -> list[dict[str, Any]]:
    return nodes(kubectl, selector=f"karpenter.sh/nodepool={POOL}")


def test_empty_nodes_removed_one_at_a_time_and_do_not_disrupt_stays(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool(POOL, consolidate_after="5s", budgets=[{"nodes": "1"}])
    kubectl.apply(deployment(APP, namespace, replicas=4, cpu="500m", affinity=ONE_PER_NODE))
    wait_bound(kubectl, namespace, 4, timeout=180)
    launched = wait_for(
        lambda: len(_pool_nodes(kubectl)) == 4 and _pool_nodes(kubectl),
        message="4 nodes, one per pod",
    )
    keep = sorted(n["metadata"]["name"] for n in launched)[0]
    kubectl("annotate", "node", keep, "karpenter.sh/do-not-disrupt=true")

    with DeletionWatcher(kubectl) as watcher:
        scale(kubectl, namespace, APP, 0)
        wait_for(
            lambda: [n["metadata"]["name"] for n in _pool_nodes(kubectl)] == [keep],
            timeout=300,
            message="every empty node but the do-not-disrupt one removed",
        )
        # The protected node outlives another full loop (validation delay + polling period).
        time.sleep(30)
        assert [n["metadata"]["name"] for n in _pool_nodes(kubectl)] == [keep]

    assert watcher.max_deleting == 1, "the one-node budget allowed overlapping deletions"
    assert len(watcher.order) == 3
    assert not [p for p in pods(kubectl, namespace) if not p["metadata"].get("deletionTimestamp")]

    commands = karpy.log_lines("disrupting node(s) via delete")
    counts = [int(m.group(1)) for line in commands if (m := _COUNT.search(line))]
    assert counts == [1, 1, 1], commands
    claims = nodeclaims(kubectl)
    assert [c["status"]["nodeName"] for c in claims] == [keep]
    disrupted = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_nodeclaims_disrupted_total" and s.labels.get("nodepool") == POOL
    ]
    assert sum(s.value for s in disrupted) == 3
    assert {s.labels["reason"] for s in disrupted} == {"empty"}


def test_nodepool_with_missing_nodeclass_is_not_ready_and_launches_nothing(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess
) -> None:
    kubectl.apply(nodepool("orphan", nodeclass="does-not-exist"))
    kubectl.apply(deployment("stranded", namespace, replicas=2, cpu="500m"))

    def not_ready() -> dict[str, Any] | None:
        pool: dict[str, Any] = kubectl.json("get", "nodepool", "orphan")
        found = condition(pool, "NodeClassReady")
        return pool if found is not None and found.get("status") == "False" else None

    pool = wait_for(not_ready, timeout=60, message="NodeClassReady=False")
    nodeclass_ready = condition(pool, "NodeClassReady")
    assert nodeclass_ready is not None
    assert nodeclass_ready["reason"] == "NodeClassNotFound"
    assert "KWOKNodeClass/does-not-exist" in nodeclass_ready["message"]
    ready = condition(pool, "Ready")
    # As Karpenter reports it: the root names its unhealthy dependents.
    assert ready is not None and ready["status"] == "False"
    assert (ready["reason"], ready["message"]) == ("UnhealthyDependents", "NodeClassReady=False")

    # Pending pods for longer than a full provisioning batch: nothing is launched.
    wait_for(
        lambda: len(pods(kubectl, namespace, "app=stranded")) == 2,
        timeout=60,
        message="the pods exist",
    )
    time.sleep(15)
    assert nodeclaims(kubectl) == []
    assert cloudprovider_calls(karpy.metrics(), "create") == 0
    assert all(not p["spec"].get("nodeName") for p in pods(kubectl, namespace, "app=stranded"))
