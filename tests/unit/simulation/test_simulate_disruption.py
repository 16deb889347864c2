"""`karpy simulate --disruption` on cluster snapshots written as manifests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.cli import main
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.scheduling import format_resources

TYPES = {t.name: t for t in kwok_instance_types()}


def nodepool(policy: str = "WhenEmptyOrUnderutilized", nodes: str = "100%") -> dict[str, Any]:
    return {
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
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                    ],
                }
            },
            "disruption": {
                "consolidationPolicy": policy,
                "consolidateAfter": "0s",
                "budgets": [{"nodes": nodes}],
            },
        },
    }


def node(name: str, instance_type: str, zone: str = "test-zone-a") -> dict[str, Any]:
    it = TYPES[instance_type]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                **it.requirements.labels(),
                "karpenter.sh/nodepool": "default",
                "node.kubernetes.io/instance-type": instance_type,
                "topology.kubernetes.io/zone": zone,
                "karpenter.sh/capacity-type": "on-demand",
                "kubernetes.io/hostname": name,
            },
        },
        "status": {
            "capacity": format_resources(it.capacity),
            "allocatable": format_resources(it.allocatable),
        },
    }


def pod(
    name: str, node_name: str, cpu: str, app: str = "web", **annotations: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "labels": {"app": app},
        "ownerReferences": [{"kind": "ReplicaSet", "name": app, "controller": True}],
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node_name,
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def pdb(app: str, max_unavailable: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": max_unavailable},
    }


def write(tmp_path: Path, *docs: dict[str, Any]) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["simulate", "--disruption", "-o", "json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def price(name: str) -> float:
    return next(
        o.price
        for o in TYPES[name].offerings
        if o.zone == "test-zone-a" and o.capacity_type == "on-demand"
    )


def test_underused_nodes_are_removed_and_the_saving_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(
        tmp_path,
        nodepool(),
        node("a", "c-8x-amd64-linux"),
        node("b", "c-8x-amd64-linux"),
        node("c", "c-8x-amd64-linux"),
        node("empty", "c-8x-amd64-linux"),
        pod("a1", "a", "1"),
        pod("b1", "b", "1"),
        pod("c1", "c", "1"),
    )
    doc = run(capsys, "-f", f)
    commands = doc["commands"]
    assert commands[0]["method"] == "emptiness"
    assert [n["name"] for n in commands[0]["nodes"]] == ["empty"]
    assert commands[0]["budgets"] == [{"nodePool": "default", "nodes": 1, "allowed": 4}]
    # the three 1-CPU pods go together onto one 4-CPU node, cheaper than keeping any 8-CPU one
    (merge,) = commands[1:]
    assert merge["method"] == "multi-node-consolidation"
    assert merge["decision"] == "replace"
    assert sorted(n["name"] for n in merge["nodes"]) == ["a", "b", "c"]
    assert merge["replacement"]["instanceType"] == "c-4x-amd64-linux"
    assert merge["podsMoved"] == 3
    summary = doc["summary"]
    assert summary["converged"] is True
    assert (summary["nodesBefore"], summary["nodesAfter"]) == (4, 1)
    assert summary["costAfter"] == pytest.approx(price("c-4x-amd64-linux"), abs=1e-5)
    assert summary["saving"] == pytest.approx(
        4 * price("c-8x-amd64-linux") - price("c-4x-amd64-linux"), abs=1e-5
    )
    assert summary["lowerBound"] <= summary["simulateCost"] <= summary["costAfter"] + 1e-9


def test_replacement_by_a_cheaper_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, nodepool(), node("big", "c-32x-amd64-linux"), pod("p", "big", "1"))
    doc = run(capsys, "-f", f)
    (command,) = doc["commands"]
    assert command["decision"] == "replace"
    assert command["replacement"]["instanceType"] != "c-32x-amd64-linux"
    assert command["replacement"]["price"] < price("c-32x-amd64-linux")
    assert command["moves"] == [{"pod": "default/p", "node": command["replacement"]["name"]}]
    assert doc["summary"]["replacements"] == 1


def test_pdb_and_do_not_disrupt_keep_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(
        tmp_path,
        nodepool(),
        node("guarded", "c-8x-amd64-linux"),
        node("pinned", "c-8x-amd64-linux"),
        node("busy", "c-8x-amd64-linux"),
        pod("g1", "guarded", "1", app="guarded"),
        pdb("guarded", 0),
        pod("p1", "pinned", "1", app="pinned", **{"karpenter.sh/do-not-disrupt": "true"}),
        pod("b1", "busy", "7500m", app="busy"),
    )
    doc = run(capsys, "-f", f)
    assert doc["commands"] == []
    blocked = {b["node"]: b["reason"] for b in doc["blocked"]}
    assert blocked["guarded"] == 'pdb "default/guarded" prevents pod evictions'
    assert "do-not-disrupt" in blocked["pinned"]
    assert doc["summary"]["saving"] == 0


def test_budget_limits_each_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [node(f"n{i}", "c-8x-amd64-linux") for i in range(10)]
    pods = [pod(f"p{i}", f"n{i}", "500m") for i in range(10)]
    f = write(tmp_path, nodepool(nodes="20%"), *nodes, *pods)
    doc = run(capsys, "-f", f)
    for command in doc["commands"]:
        for budget in command["budgets"]:
            assert budget["nodes"] <= budget["allowed"]
    assert doc["commands"][0]["budgets"] == [{"nodePool": "default", "nodes": 2, "allowed": 2}]
    # the commands of one round share the round's budget
    taken: dict[int, int] = {}
    for command in doc["commands"]:
        taken[command["round"]] = taken.get(command["round"], 0) + len(command["nodes"])
    assert max(taken.values()) <= 2
    assert doc["summary"]["nodesAfter"] == 1


def test_independent_commands_run_in_one_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # each pod is pinned to its node's zone, so no single replacement takes both nodes: two
    # single-node replacements, independent of each other, found in the same pass
    pinned = []
    for name, zone in (("pa", "test-zone-a"), ("pb", "test-zone-b")):
        p = pod(name, f"big-{zone[-1]}", "1", app=name)
        p["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": zone}
        pinned.append(p)
    f = write(
        tmp_path,
        nodepool(),
        node("big-a", "c-32x-amd64-linux", zone="test-zone-a"),
        node("big-b", "c-32x-amd64-linux", zone="test-zone-b"),
        *pinned,
    )
    doc = run(capsys, "-f", f)
    commands = doc["commands"]
    assert [(c["round"], c["method"], c["decision"]) for c in commands] == [
        (1, "single-node-consolidation", "replace"),
        (1, "single-node-consolidation", "replace"),
    ]
    assert sorted(c["nodes"][0]["name"] for c in commands) == ["big-a", "big-b"]
    assert sorted(c["replacement"]["zone"] for c in commands) == ["test-zone-a", "test-zone-b"]
    assert (doc["summary"]["commands"], doc["summary"]["rounds"]) == (2, 1)


def test_command_line_table(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        nodepool(),
        node("a", "c-8x-amd64-linux"),
        node("b", "c-8x-amd64-linux"),
        pod("a1", "a", "1"),
        pod("b1", "b", "1"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "karpy.cli", "simulate", "--disruption", "-f", f],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # two 1-CPU pods: one 4-CPU node for both is cheaper than keeping an 8-CPU one
    assert "round 1:\n1. multi-node-consolidation: replace a (c-8x-amd64-linux" in done.stdout
    assert "replacement c-4x-amd64-linux" in done.stdout
    assert "nodes 2 -> 1 (2 removed, 1 replacements, 2 pods moved)" in done.stdout
    assert "lower bound of any placement" in done.stdout


def test_min_savings_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, nodepool(), node("a", "c-8x-amd64-linux"))
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "--disruption", "--min-savings", "1.5", "-f", f])
    assert exited.value.code == 2
    assert "--min-savings: '1.5' must be in [0, 1)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from-cluster", "-f", "x.yaml"], "give one or the other"),
        (["--kubeconfig", "k", "-f", "x.yaml"], "only with --from-cluster"),
        (["--disruption", "--from-cluster", "-f", "x.yaml"], "give one or the other"),
        (["--disruption"], "-f/--filename: Required value"),
        (["--disruption", "--fail-on-unschedulable", "-f", "x.yaml"], "not with --disruption"),
    ],
)
def test_from_cluster_and_files_are_one_or_the_other(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and not captured.out


def test_from_cluster_without_a_reachable_cluster_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "simulate",
            "--disruption",
            "--from-cluster",
            "--kubeconfig",
            str(tmp_path / "missing"),
        ]
    )
    assert code == 1
    captured = capsys.readouterr()
    assert "error: cannot read the cluster: kubeconfig not found" in captured.err
    assert not captured.out
