"""`karpy simulate --from-cluster` (no --disruption): what karpy would launch now for the
pending pods of a live cluster, run as the installed program against the session's apiserver.

A KWOKNodeClass and a NodePool are applied and pods wait in the test's namespace as karpy
provisions for them (PodScheduled=False, Unschedulable). The plan places them on new
NodeClaims of the pool; a pod no type can hold is listed as unschedulable and makes
`--fail-on-unschedulable` exit 3. `--context` picks the kubeconfig's context, and nothing in
the cluster changes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.apis.descriptors import AKSNODECLASSES, KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.kube import NODES
from tests.integration.disruption.support import AMD64_ON_DEMAND, Env, unschedulable
from tests.kit import kwok_nodeclass, nodepool

pytestmark = pytest.mark.timeout(240)
KARPY = Path(sys.executable).parent / "karpy"
JSON = dict[str, Any]


async def _karpy(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(KARPY),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=180)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _two_contexts(kubeconfig: str, path: Path) -> str:
    """The session's kubeconfig with a second context, made current, whose server is closed:
    only `--context session` reaches the cluster."""
    config = yaml.safe_load(Path(kubeconfig).read_text())
    real = config["contexts"][0]
    cluster = next(c for c in config["clusters"] if c["name"] == real["context"]["cluster"])
    config["clusters"].append(
        {"name": "closed", "cluster": {**cluster["cluster"], "server": "https://127.0.0.1:9"}}
    )
    config["contexts"] = [
        {"name": "session", "context": real["context"]},
        {"name": "closed", "context": {**real["context"], "cluster": "closed"}},
    ]
    config["current-context"] = "closed"
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def test_pending_pods_of_a_live_cluster_are_planned_read_only(
    env: Env, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool(requirements=AMD64_ON_DEMAND))
    for name in ("web-1", "web-2"):
        await unschedulable(env, namespace, name, "1500m")
    config = _two_contexts(kubeconfig, tmp_path / "kubeconfig")

    code, out, err = await _karpy(
        "simulate", "--from-cluster", "--kubeconfig", config, "--context", "session", "-o", "json"
    )
    assert code == 0, err
    plan: JSON = json.loads(out)
    placed = {pod for claim in plan["nodeClaims"] for pod in claim["pods"]}
    assert placed == {f"{namespace}/web-1", f"{namespace}/web-2"}, plan
    assert plan["unschedulable"] == []
    for claim in plan["nodeClaims"]:
        assert claim["nodePool"] == "pool"
        assert claim["offering"]["instanceType"].endswith("-amd64-linux"), claim["offering"]
        assert claim["offering"]["capacityType"] == "on-demand"

    # the current context's server is closed: a runtime failure, status 1, one line
    code, out, err = await _karpy("simulate", "--from-cluster", "--kubeconfig", config)
    assert code == 1 and out == ""
    assert err.startswith("error: cannot read the cluster:"), err

    # a pod no type can hold: listed, and --fail-on-unschedulable exits 3 with the plan
    await unschedulable(env, namespace, "giant", "1000")
    code, out, err = await _karpy(
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        kubeconfig,
        "--fail-on-unschedulable",
        "-o",
        "json",
    )
    assert code == 3, err
    plan = json.loads(out)
    assert [u["pod"] for u in plan["unschedulable"]] == [f"{namespace}/giant"]
    assert {p for c in plan["nodeClaims"] for p in c["pods"]} == placed

    # the table is what a person reads: it names the pending pods' new node
    code, out, err = await _karpy("simulate", "--from-cluster", "--kubeconfig", kubeconfig)
    assert code == 0, err
    assert "pool" in out and "giant" in out

    # read only: no NodeClaim or Node was made
    assert (await env.client.list(NODECLAIMS)).items == []
    assert (await env.client.list(NODES)).items == []


async def test_an_aksnodeclass_in_the_cluster_sizes_its_nodepools_nodes(
    env: Env, kubeconfig: str, namespace: str
) -> None:
    """Its maxPods caps the pods of each planned node: 12 pending pods take 2 nodes of
    10 pods (250 a node, Azure CNI overlay's, without it)."""
    await env.create(
        AKSNODECLASSES,
        {
            "apiVersion": "karpenter.azure.com/v1beta1",
            "kind": "AKSNodeClass",
            "metadata": {"name": "sized"},
            "spec": {"maxPods": 10},
        },
    )
    sku = {
        "key": "node.kubernetes.io/instance-type",
        "operator": "In",
        "values": ["Standard_D16s_v3"],
    }
    await env.create(
        NODEPOOLS,
        nodepool(
            "aks",
            nodeclass="sized",
            kind="AKSNodeClass",
            group="karpenter.azure.com",
            requirements=[*AMD64_ON_DEMAND, sku],
        ),
    )
    for i in range(12):
        await unschedulable(env, namespace, f"small-{i}", "100m")

    code, out, err = await _karpy(
        "simulate", "--from-cluster", "--kubeconfig", kubeconfig, "-o", "json"
    )
    assert code == 0, err
    plan: JSON = json.loads(out)
    assert plan["unschedulable"] == []
    assert sorted(len(claim["pods"]) for claim in plan["nodeClaims"]) == [2, 10], plan
    assert {claim["offering"]["instanceType"] for claim in plan["nodeClaims"]} == {
        "Standard_D16s_v3"
    }
