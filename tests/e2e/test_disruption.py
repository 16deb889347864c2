"""End to end: empty nodes are removed after consolidateAfter within the NodePool's budget, a
node annotated `karpenter.sh/do-not-disrupt` stays, budgets by reason and on a cron schedule
block only while they apply, and a NodePool whose NodeClass does not exist is not Ready, says
why, and launches nothing (real `karpy run`, kwok provider)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from kubetest import Kubectl

from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess, cloudprovider_calls
from tests.e2e.support import (
    ClaimWatcher,
    condition,
    deployment,
    events,
    holds,
    nodeclaims,
    nodepool,
    one_per_node,
    pods,
    pool_nodes,
    scale,
    wait_bound,
    wait_for,
    wait_pool_nodes,
)

POOL = "empty"
APP = "spread"
_COUNT = re.compile(r"disrupted-node-count\"?\s*[:=]\s*(\d+)")


def _pool_nodes(kubectl: Kubectl) -> list[dict[str, Any]]:
    return pool_nodes(kubectl, POOL)


def test_empty_nodes_removed_one_at_a_time_and_do_not_disrupt_stays(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool(POOL, consolidate_after="5s", budgets=[{"nodes": "1"}])
    kubectl.apply(deployment(APP, namespace, replicas=4, cpu="500m", affinity=one_per_node(APP)))
    wait_bound(kubectl, namespace, 4, timeout=180)
    launched = wait_pool_nodes(kubectl, POOL, 4)
    keep = sorted(n["metadata"]["name"] for n in launched)[0]
    kubectl("annotate", "node", keep, "karpenter.sh/do-not-disrupt=true")

    with ClaimWatcher(kubectl) as watcher:
        scale(kubectl, namespace, APP, 0)
        wait_for(
            lambda: [n["metadata"]["name"] for n in _pool_nodes(kubectl)] == [keep],
            timeout=300,
            message="every empty node but the do-not-disrupt one removed",
        )
        # The protected node outlives three more complete disruption passes.
        holds(
            lambda: _only(kubectl, keep),
            passes=karpy.disruption_passes,
        )

    assert watcher.max_deleting == 1, "the one-node budget allowed overlapping deletions"
    assert len(watcher.deleting) == 3
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


def _budgets(kubectl: Kubectl, budgets: list[dict[str, Any]]) -> None:
    kubectl.apply(nodepool(POOL, nodeclass=POOL, consolidate_after="5s", budgets=budgets))


def _only(kubectl: Kubectl, name: str) -> None:
    assert [n["metadata"]["name"] for n in _pool_nodes(kubectl)] == [name]


def _stay(kubectl: Kubectl, karpy: KarpyProcess, names: set[str]) -> None:
    """The nodes `names` all stay (none starts deleting) while karpy runs three more complete
    disruption passes."""

    def check() -> None:
        live = {
            n["metadata"]["name"]
            for n in _pool_nodes(kubectl)
            if not n["metadata"].get("deletionTimestamp")
        }
        assert names <= live, f"{sorted(names - live)} disrupted under a blocking budget"

    holds(check, passes=karpy.disruption_passes, interval=1)


def test_budgets_block_by_reason_and_on_their_cron_schedule_only(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    # Empty nodes under a zero budget for reason Empty: nothing goes, the NodePool says why.
    kwok_pool(POOL, consolidate_after="5s", budgets=[{"nodes": "0", "reasons": ["Empty"]}])
    kubectl.apply(deployment(APP, namespace, replicas=2, cpu="500m", affinity=one_per_node(APP)))
    wait_bound(kubectl, namespace, 2, timeout=180)
    empty = {n["metadata"]["name"] for n in wait_pool_nodes(kubectl, POOL, 2)}
    scale(kubectl, namespace, APP, 0)
    wait_for(
        lambda: not pods(kubectl, namespace),
        timeout=60,
        message="the pods gone",
    )

    def blocked() -> list[dict[str, Any]]:
        return [
            e
            for e in events(kubectl, "default", reason="DisruptionBlocked")
            if e["involvedObject"]["kind"] == "NodePool"
            and e["involvedObject"]["name"] == POOL
            and "disruption reason Empty" in e["message"]
        ]

    wait_for(blocked, timeout=120, message="DisruptionBlocked on the NodePool for reason Empty")
    _stay(kubectl, karpy, empty)

    # A zero budget for other reasons does not apply; a zero budget whose cron schedule is
    # active now (every minute, for an hour) blocks every reason.
    _budgets(
        kubectl,
        [
            {"nodes": "0", "reasons": ["Drifted", "Underutilized"]},
            {"nodes": "0", "schedule": "* * * * *", "duration": "1h"},
        ],
    )
    _stay(kubectl, karpy, empty)

    # The same zero budget on a schedule that is not active now (daily, two hours from now, for
    # ten minutes) does not block: the empty nodes go.
    later = datetime.now(UTC) + timedelta(hours=2)
    _budgets(
        kubectl,
        [
            {"nodes": "0", "reasons": ["Drifted", "Underutilized"]},
            {"nodes": "0", "schedule": f"{later.minute} {later.hour} * * *", "duration": "10m"},
        ],
    )
    wait_for(
        lambda: not _pool_nodes(kubectl),
        timeout=180,
        message="the empty nodes removed once no budget blocks",
    )
    disrupted = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_nodeclaims_disrupted_total" and s.labels.get("nodepool") == POOL
    ]
    assert sum(s.value for s in disrupted) == 2
    assert {s.labels["reason"] for s in disrupted if s.value} == {"empty"}


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
