"""`karpy explain` (the installed command) against the session's real apiserver, and the
controller's `karpy_disruption_blocked_nodes` and events agreeing with it for the same node.

Nodes: six 4-CPU nodes, each kept by one reason (a PDB, a do-not-disrupt pod, a budget of 0
in a cron window, consolidateAfter not elapsed, a pod no cheaper type can hold, cheaper types
too few for the NodePool's minValues). Pending pods:
an arm64 pod with an amd64-only NodePool, a pod larger than any offering, an untolerated
taint, a NodePool at its limit, and a pod whose volume is in another zone. Each answer's JSON
names the reason word and the object, and its table names the same."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODEPOOLS, SCHEDULINGCONFIGS
from karpy.apis.v1 import Budget, validate_nodepool
from karpy.apis.v1.labels import LABEL_INSTANCE_TYPE
from karpy.controllers.disruption import metrics
from karpy.controllers.disruption.budgetstatus import NodePoolBudgetsController
from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.controller import DisruptionController
from karpy.controllers.disruption.events import DedupingEvents
from karpy.controllers.disruption.methods import Command
from karpy.controllers.disruption.orchestration import OrchestrationQueue
from karpy.kube import PODS, EventRecorder, FakeClock, RealClock
from karpy.kube.resources import (
    EVENTS,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODDISRUPTIONBUDGETS,
)
from karpy.scheduling.engine.model import NewNodeClaim
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.state import Cluster
from tests.integration.disruption.support import (
    AMD64_ON_DEMAND,
    Env,
    bare_pod,
    consolidatable_node,
    managed_node,
    unschedulable,
    untainted,
)
from tests.kit import kwok_nodeclass, nodepool, pdb, schedulingconfig

pytestmark = pytest.mark.timeout(300)
JSON = dict[str, Any]
KARPY = str(Path(sys.executable).parent / "karpy")
"""The installed console script, as users run it."""


async def _explain(kubeconfig: str, *args: str, output: str = "json") -> str:
    process = await asyncio.create_subprocess_exec(
        KARPY,
        "explain",
        *args,
        "-o",
        output,
        env={**os.environ, "KUBECONFIG": kubeconfig},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def _both(kubeconfig: str, *args: str) -> tuple[JSON, str]:
    answer, table = await asyncio.gather(
        _explain(kubeconfig, *args), _explain(kubeconfig, *args, output="table")
    )
    parsed: JSON = json.loads(answer)
    return parsed, table


def _consolidation(answer: JSON) -> JSON:
    method: JSON = next(m for m in answer["methods"] if m["method"] == "consolidation")
    return method


async def _pools(env: Env) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    common: JSON = {"requirements": AMD64_ON_DEMAND, "policy": "WhenEmptyOrUnderutilized"}
    await env.create(
        NODEPOOLS, nodepool("pool", consolidate_after="0s", budgets=[{"nodes": "100%"}], **common)
    )
    window = {"nodes": "0", "schedule": "* * * * *", "duration": "1h"}
    await env.create(
        NODEPOOLS, nodepool("frozen", consolidate_after="0s", budgets=[window], **common)
    )
    await env.create(NODEPOOLS, nodepool("slow", consolidate_after="1h", **common))
    # three cheaper types would hold its node's pod: minValues 4 keeps the node
    exists = {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 4}
    await env.create(
        NODEPOOLS,
        nodepool(
            "picky",
            consolidate_after="0s",
            budgets=[{"nodes": "100%"}],
            policy="WhenEmptyOrUnderutilized",
            requirements=[*AMD64_ON_DEMAND, exists],
        ),
    )


async def test_explain_node_names_each_blocker_and_the_controller_agrees(
    env: Env, kubeconfig: str, namespace: str
) -> None:
    await _pools(env)
    for name in ("guarded", "pinned", "full"):
        await consolidatable_node(env, name)
    await consolidatable_node(env, "frozen-1", pool="frozen")
    await managed_node(env, "slow-1", pool="slow", consolidatable=False)
    await consolidatable_node(env, "picky-1", pool="picky")
    web = {"protected": "yes"}
    pods = [
        bare_pod("guarded-0", namespace, "1", node="guarded", labels=web),
        bare_pod(
            "pinned-0",
            namespace,
            "1",
            node="pinned",
            annotations={"karpenter.sh/do-not-disrupt": "true"},
        ),
        bare_pod("full-0", namespace, "3500m", node="full"),
        bare_pod("frozen-0", namespace, "1", node="frozen-1"),
        bare_pod("slow-0", namespace, "1", node="slow-1"),
        bare_pod(
            "picky-0",
            namespace,
            "1",
            node="picky-1",
            spec={"nodeSelector": {"karpenter.sh/nodepool": "picky"}},
        ),
    ]
    for p in pods:
        await env.client.create(PODS, p, namespace=namespace)
    await env.client.create(
        PODDISRUPTIONBUDGETS,
        pdb("guard", namespace, selector={"matchLabels": web}),
        namespace=namespace,
    )
    await untainted(env, ["guarded", "pinned", "full", "frozen-1", "slow-1", "picky-1"])

    expected = {
        "guarded": ("pdb", f"PodDisruptionBudget/{namespace}/guard"),
        "pinned": ("do-not-disrupt", f"Pod/{namespace}/pinned-0"),
        "frozen-1": ("budget", "NodePool/frozen"),
        "slow-1": ("consolidate-after", "NodePool/slow"),
        "full": ("no-cheaper-replacement", "Node/full"),
        "picky-1": ("min-values", "Node/picky-1"),
    }
    answers = await asyncio.gather(*(_both(kubeconfig, "node", n) for n in expected))
    for (name, (reason, obj)), (answer, table) in zip(expected.items(), answers, strict=True):
        blocker = _consolidation(answer).get("blocker")
        assert blocker is not None, (name, answer)
        assert (blocker["reason"], blocker["object"]) == (reason, obj), (name, answer)
        row = next(line for line in table.splitlines() if line.startswith("consolidation"))
        assert reason in row and obj in row, (name, table)

    # the controller, on its informers' state, publishes the same words for the same nodes
    cluster = Cluster(env.cache)
    recorder = EventRecorder(env.client)
    controller = DisruptionController(
        client=env.client,
        cluster=cluster,
        events=recorder,
        pdbs=await env.informer(PODDISRUPTIONBUDGETS),
    )
    await env.until(
        lambda: cluster.synced() and len([n for n in cluster.nodes() if n.initialized]) == 6,
        message="cluster state with the six nodes",
    )
    verdicts = controller.verdicts()
    by_name = {
        (n.node_name or ""): v
        for n in cluster.nodes()
        for key, (_, v) in verdicts.items()
        if key == n.key
    }
    for name, (reason, obj) in list(expected.items())[:4]:  # the search's word needs a pass
        got = next(v for v in by_name[name] if v.method == "consolidation").blocker
        assert got is not None and (got.reason, got.object) == (reason, obj), name
    await controller.publish_blockers()
    for pool, reason in (("pool", "pdb"), ("pool", "do-not-disrupt"), ("frozen", "budget")):
        gauge = metrics.BLOCKED_NODES.labels(pool, "consolidation", reason)
        assert gauge._value.get() >= 1, (pool, reason)
    # and its DisruptionBlocked event on the Node starts with the same word
    controller.prepare(controller.methods[0], publish=True)
    await recorder.flush()
    listed = await env.client.list(EVENTS, field_selector="reason=DisruptionBlocked")
    messages = {e["message"] for e in listed.items if e["involvedObject"]["name"] == "guarded"}
    assert messages and all(m.startswith("pdb: ") for m in messages), messages


async def test_explain_pod_names_the_first_misfit_of_each_nodepool(
    env: Env, kubeconfig: str, namespace: str
) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    zone_a = [
        *AMD64_ON_DEMAND,
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-a"]},
    ]
    await env.create(NODEPOOLS, nodepool("amd", requirements=zone_a))
    await env.create(
        NODEPOOLS,
        nodepool(
            "tainted",
            requirements=AMD64_ON_DEMAND,
            taints=[{"key": "team", "value": "x", "effect": "NoSchedule"}],
        ),
    )
    await env.create(
        NODEPOOLS, nodepool("capped", requirements=AMD64_ON_DEMAND, limits={"cpu": "0"})
    )
    await unschedulable(env, namespace, "huge", "1000")
    arm = bare_pod(
        "arm",
        namespace,
        "1",
        spec={"schedulerName": "elsewhere", "nodeSelector": {"kubernetes.io/arch": "arm64"}},
    )
    await env.client.create(PODS, arm, namespace=namespace)
    await env.client.patch_status(
        PODS,
        "arm",
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "no nodes",
                    }
                ]
            }
        },
        namespace=namespace,
    )
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"{namespace}-vol"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/x"},
            "storageClassName": "",
            "claimRef": {"namespace": namespace, "name": "data"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": ["test-zone-b"],
                                }
                            ]
                        }
                    ]
                }
            },
        },
    }
    await env.client.create(PERSISTENTVOLUMES, pv)
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "volumeName": f"{namespace}-vol",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    await env.client.create(PERSISTENTVOLUMECLAIMS, pvc, namespace=namespace)
    zonal = bare_pod(
        "zonal",
        namespace,
        "1",
        spec={"schedulerName": "elsewhere"},
        volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
    )
    await env.client.create(PODS, zonal, namespace=namespace)
    await env.client.patch_status(
        PODS,
        "zonal",
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "no nodes",
                    }
                ]
            }
        },
        namespace=namespace,
    )
    # pod affinity to pods that do not exist; a SchedulingConfig that keeps spot off a NodePool
    # of another NodeClass that allows it
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "topology.kubernetes.io/zone",
                    "labelSelector": {"matchLabels": {"app": "db"}},
                }
            ]
        }
    }
    await _pending_pod(env, namespace, "near-db", {"affinity": affinity})
    await env.create(KWOKNODECLASSES, kwok_nodeclass("other"))
    either = {
        "key": "karpenter.sh/capacity-type",
        "operator": "In",
        "values": ["spot", "on-demand"],
    }
    await env.create(
        NODEPOOLS, nodepool("spotty", nodeclass="other", requirements=[AMD64_ON_DEMAND[0], either])
    )
    on_demand = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
    await env.create(
        SCHEDULINGCONFIGS, schedulingconfig("no-spot", nodeclass="other", requirements=[on_demand])
    )
    spot = {"nodeSelector": {"karpenter.sh/capacity-type": "spot"}}
    await _pending_pod(env, namespace, "spot", spot)
    cases = {
        "arm": {"amd": "requirement"},
        "huge": {"amd": "resources"},
        "zonal": {"amd": "volume-zone", "tainted": "taint", "capped": "limits"},
        "near-db": {"amd": "pod-affinity"},
        "spot": {"spotty": "schedulingconfig", "amd": "requirement"},
    }
    answers = await asyncio.gather(
        *(_both(kubeconfig, "pod", name, "-n", namespace) for name in cases)
    )
    for (name, want), (answer, table) in zip(cases.items(), answers, strict=True):
        assert answer["state"] == "pending", answer
        got = {p["nodePool"]: p for p in answer["nodePools"]}
        for pool, reason in want.items():
            assert got[pool]["reason"] == reason, (name, pool, answer)
            row = next(line for line in table.splitlines() if line.startswith(pool + " "))
            assert reason in row and got[pool]["object"] in row, (name, table)
        if name == "near-db":
            assert got["amd"]["object"] == "PodAffinity/topology.kubernetes.io/zone", answer
        if name == "spot":
            assert got["spotty"]["object"] == "SchedulingConfig/no-spot", answer
        if name == "zonal":
            assert got["tainted"]["object"] == "Taint/team=x:NoSchedule"


async def _pending_pod(env: Env, namespace: str, name: str, spec: JSON) -> None:
    """A pod another scheduler owns, marked Unschedulable as kube-scheduler marks pods."""
    await env.client.create(
        PODS,
        bare_pod(name, namespace, "1", spec={"schedulerName": "elsewhere", **spec}),
        namespace=namespace,
    )
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "no nodes",
    }
    await env.client.patch_status(
        PODS, name, {"status": {"conditions": [unschedulable]}}, namespace=namespace
    )


async def test_nodepool_budget_summary_in_status_and_explain_shows_the_windows(
    env: Env, kubeconfig: str
) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    office_hours = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}
    new_year = {"nodes": "0", "schedule": "0 0 1 1 *", "duration": "1h"}
    budgets = [{"nodes": "50%"}, office_hours, {**new_year, "reasons": ["Drifted"]}]
    await env.create(
        NODEPOOLS,
        nodepool("windowed", requirements=AMD64_ON_DEMAND, consolidate_after="0s", budgets=budgets),
    )
    for name in ("windowed-1", "windowed-2"):
        await managed_node(env, name, pool="windowed")
    cluster = Cluster(env.cache)
    await env.until(
        lambda: (
            cluster.synced()
            and len([n for n in cluster.nodes() if n.initialized and n.nodepool == "windowed"]) == 2
        ),
        message="cluster state with the two nodes",
    )
    pools = await env.informer(NODEPOOLS)
    clock = FakeClock(wall_start=datetime(2026, 11, 30, 8, 0, tzinfo=UTC))  # a Monday
    controller = NodePoolBudgetsController(
        client=env.client, nodepools=pools, nodes=cluster.nodes, synced=cluster.synced, clock=clock
    )
    await env.cached(pools, "windowed", lambda p: True)
    result = await controller.reconcile("windowed")
    assert result is not None and result.requeue_after == 10.0
    written = (await env.get(NODEPOOLS, "windowed"))["status"]["disruption"]["budgets"]
    # the CRD keeps the field; 50% of 2 nodes until the office-hours window opens at 9:00
    assert {b["reason"]: b for b in written}["Empty"] == {
        "reason": "Empty",
        "allowed": 1,
        "disrupting": 0,
        "nextChangeAt": "2026-11-30T09:00:00Z",
        "allowedAfterChange": 0,
    }
    clock.advance(3600 * 2 - 5)  # 9:59:55: in the window, which closes at 17:00
    await env.cached(pools, "windowed", lambda p: "disruption" in (p.get("status") or {}))
    await controller.reconcile("windowed")
    written = (await env.get(NODEPOOLS, "windowed"))["status"]["disruption"]["budgets"]
    drifted = {b["reason"]: b for b in written}["Drifted"]
    assert (drifted["allowed"], drifted["nextChangeAt"], drifted["allowedAfterChange"]) == (
        0,
        "2026-11-30T17:00:00Z",
        1,
    )

    # `explain nodepool` (the real clock) shows each window's open and close times
    answer, table = await _both(kubeconfig, "nodepool", "windowed")
    now = datetime.now(UTC)
    windows = {w["schedule"]: w for w in answer["windows"]}
    for budget in (office_hours, new_year):
        window = Budget.model_validate(budget).window(now)
        assert window is not None and window[1] is not None
        shown = windows[budget["schedule"]]
        opens, closes = (t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in window)
        assert (shown["opensAt"], shown["closesAt"]) == (opens, closes), answer
        row = next(line for line in table.splitlines() if line.startswith(budget["schedule"]))
        assert opens in row and closes in row, table
    assert windows[new_year["schedule"]]["reasons"] == ["Drifted"]
    assert "nextChangeAt" in answer["budgets"]["Underutilized"], answer


async def test_explain_node_names_the_command_disrupting_it(env: Env, kubeconfig: str) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool(requirements=AMD64_ON_DEMAND))
    await managed_node(env, "old", hold=True)
    cluster = Cluster(env.cache)
    await env.until(
        lambda: cluster.synced() and cluster.node_for_nodeclaim("old") is not None,
        message="cluster state with the node",
    )
    queue = OrchestrationQueue(
        client=env.client,
        cluster=cluster,
        events=DedupingEvents(EventRecorder(env.client), clock=RealClock()),
    )
    node = cluster.node_for_nodeclaim("old")
    assert node is not None
    types = ("c-1x-amd64-linux", "c-2x-amd64-linux")
    replacement = NewNodeClaim(
        nodepool="pool",
        requirements=Requirements(
            [Requirement(LABEL_INSTANCE_TYPE, complement=False, values=types)]
        ),
        instance_types=[],
        requests={},
        pods=[],
        offering=None,
        labels={},
    )
    pool = validate_nodepool(cluster.nodepool_informer.get("pool") or {})
    command = Command(
        candidates=(Candidate(node=node, nodepool=pool),),
        replacements=(replacement,),
        reason="Underutilized",
        consolidation_type="single",
        savings=0.0125,
    )
    assert await queue.start(command)

    answer, table = await _both(kubeconfig, "node", "old")
    got = answer["command"]
    assert (got["method"], got["decision"], got["reason"], got["savingsPerHour"]) == (
        "consolidation/single",
        "replace",
        "Underutilized",
        0.0125,
    ), answer
    # in a command: no method takes it again
    assert not any(m["candidate"] for m in answer["methods"]), answer
    (made,) = got["replacements"]
    assert made["instanceTypes"] == list(types) and made["initialized"] is False, answer
    line = next(x for x in table.splitlines() if x.startswith("command: "))
    assert "consolidation/single (replace)" in line and "Underutilized" in line, table
    assert "0.0125/h" in line, table
    assert f"replacement {made['nodeClaim']}: {','.join(types)}" in table, table
