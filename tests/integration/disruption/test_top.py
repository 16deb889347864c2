"""`karpy top` against the session's real apiserver: `--once -o json` (the installed command,
as scripts run it) on a few Nodes, NodeClaims and pods created directly, and the live view fed
by `WatchFeed`, the informers' watch, showing a Node created after it started."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from karpy.apis.descriptors import KWOKNODECLASSES, NODEPOOLS
from karpy.kube import PODS
from karpy.simulation.catalogchoice import load_catalog
from karpy.top.app import TopApp
from karpy.top.feed import WatchFeed
from tests.integration.disruption.support import Env, bare_pod, consolidatable_node, create_node
from tests.kit import kwok_nodeclass, nodepool

pytestmark = pytest.mark.timeout(300)
JSON = dict[str, Any]
KARPY = str(Path(sys.executable).parent / "karpy")
C4 = "c-4x-amd64-linux"


def _price(name: str, capacity_type: str, zone: str) -> float:
    it = next(t for t in load_catalog(None, aws=False) if t.name == name)
    return next(o.price for o in it.offerings if (o.capacity_type, o.zone) == (capacity_type, zone))


async def _top(kubeconfig: str, *args: str) -> str:
    return await _karpy(kubeconfig, "top", *args)


async def _karpy(kubeconfig: str, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        KARPY,
        *args,
        env={**os.environ, "KUBECONFIG": kubeconfig},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def _fleet(env: Env, namespace: str) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool("pool"))
    await consolidatable_node(env, "top-a")
    await consolidatable_node(env, "top-b", instance_type="c-2x-amd64-linux")
    for name, cpu, node in (("a1", "2", "top-a"), ("a2", "1", "top-a"), ("b1", "500m", "top-b")):
        await env.client.create(
            PODS, bare_pod(name, namespace, cpu, node=node), namespace=namespace
        )


async def test_once_json_and_table_on_the_cluster(
    env: Env, kubeconfig: str, namespace: str
) -> None:
    await _fleet(env, namespace)
    answer: JSON = json.loads(await _top(kubeconfig, "--once", "-o", "json"))
    nodes = {n["name"]: n for n in answer["nodes"]}
    assert sorted(nodes) == ["top-a", "top-b"]
    a = nodes["top-a"]
    assert (a["nodePool"], a["instanceType"], a["capacityType"], a["zone"]) == (
        "pool",
        C4,
        "on-demand",
        "test-zone-a",
    )
    assert a["pricePerHour"] == pytest.approx(_price(C4, "on-demand", "test-zone-a"))
    assert a["cpu"] == {"requested": 3.0, "allocatable": 4.0, "utilisation": 0.75}
    assert a["pods"] == 2 and a["states"] == ["Ready"]
    assert nodes["top-b"]["cpu"]["requested"] == 0.5
    (pool,) = answer["nodePools"]
    assert pool["nodePool"] == "pool" and pool["nodes"] == 2 and pool["source"] == "catalogue"
    expected = _price(C4, "on-demand", "test-zone-a") + _price(
        "c-2x-amd64-linux", "on-demand", "test-zone-a"
    )
    assert pool["perHour"] == pytest.approx(expected)
    cluster = answer["cluster"]
    assert cluster["perHour"] == pytest.approx(expected)
    # 3.5 CPUs of pods need less than what runs them now, and more than nothing
    assert 0 < cluster["lowerBoundPerHour"] <= cluster["perHour"]

    # filters and sorts; without a terminal `karpy top` prints one table and exits; and the
    # lower bound is the one `karpy simulate` reports for the same pods
    by_cost, by_type, table, simulated = await asyncio.gather(
        _top(kubeconfig, "-o", "json", "--sort", "cost", "--reverse"),
        _top(kubeconfig, "-o", "json", "-l", "node.kubernetes.io/instance-type=" + C4),
        _top(kubeconfig),
        _karpy(kubeconfig, "simulate", "--disruption", "--from-cluster", "-o", "json"),
    )
    summary = json.loads(simulated)["summary"]
    assert cluster["lowerBoundPerHour"] == pytest.approx(summary["lowerBound"], abs=1e-6)
    assert [n["name"] for n in json.loads(by_cost)["nodes"]] == ["top-b", "top-a"]
    assert [n["name"] for n in json.loads(by_type)["nodes"]] == ["top-a"]
    lines = table.splitlines()
    assert lines[0].startswith("NODE")
    assert any(line.startswith("top-a") and C4 in line and "3/4 75%" in line for line in lines)
    assert lines[-1].startswith("cluster: 2 nodes")


async def test_the_live_view_follows_the_watch(env: Env, kubeconfig: str, namespace: str) -> None:
    await _fleet(env, namespace)
    app = TopApp(feed=WatchFeed(kubeconfig=kubeconfig))

    def names() -> list[str]:
        table = app.query_one("#nodes", DataTable)
        return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]

    async def until(check: Any, what: str) -> None:
        deadline = time.monotonic() + 90
        while not check():
            status = app.query_one("#status", Static).content
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {names()} {status}"
            await pilot.pause(0.1)

    async with app.run_test(size=(200, 50)) as pilot:
        await until(lambda: names() == ["top-a", "top-b"], "the two nodes")
        await create_node(
            env,
            "top-c",
            provider_id="static://top-c",
            labels={
                "node.kubernetes.io/instance-type": C4,
                "karpenter.sh/capacity-type": "spot",
                "topology.kubernetes.io/zone": "test-zone-b",
            },
        )
        await until(lambda: "top-c" in names(), "the node created after the start")
        row = app.query_one("#nodes", DataTable).get_row("static://top-c")
        assert str(row[1]) == "-" and str(row[3]) == "spot"
        assert str(row[5]) == f"{_price(C4, 'spot', 'test-zone-b'):.4f}"
