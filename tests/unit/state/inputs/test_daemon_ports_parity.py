"""DaemonSets whose host ports are taken on one architecture only plan alike in the provisioner
(what `karpy run` does) and in `karpy simulate`: each host-port pod gets a node of the
architecture whose DaemonSets leave its port free, on both paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from karpy.scheduling.engine import SchedulingResult
from tests import kit
from tests.kit import LINUX, served
from tests.kit.parity import provisioned, simulated
from tests.unit.state.inputs.test_builder_parity import NAMESPACE, NODECLASS, NS, plan_of, pod

JSON = dict[str, Any]
ARCH = "kubernetes.io/arch"
NODE_LABEL = "testing/karpenter-node"


def _arch(arch: str) -> JSON:
    term = {"matchExpressions": [{"key": ARCH, "operator": "In", "values": [arch]}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def _port(obj: JSON, port: int) -> JSON:
    spec = obj["spec"]["template"]["spec"] if obj["kind"] == "DaemonSet" else obj["spec"]
    spec["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return obj


def daemonset(name: str, *, port: int, arch: str) -> JSON:
    ds = served(kit.daemonset(name, requests={"cpu": "100m"}), uid=f"uid-{name}")
    spec = ds["spec"]["template"]["spec"]
    spec["nodeSelector"] = {NODE_LABEL: "true"}
    spec["affinity"] = _arch(arch)
    return _port(ds, port)


def nodepool() -> JSON:
    """Both architectures, labelled so that only its nodes run the DaemonSets."""
    return served(
        kit.nodepool(
            "default",
            nodeclass="local",
            requirements=LINUX,
            labels={NODE_LABEL: "true"},
            expire_after="720h",
            ready=True,
        ),
        uid="pool-default",
    )


OBJECTS = [
    nodepool(),
    NODECLASS,
    NAMESPACE,
    daemonset("port-8000-amd64", port=8000, arch="amd64"),
    daemonset("port-9000-arm64", port=9000, arch="arm64"),
    _port(pod("needs-8000-0", affinity=_arch("arm64")), 8000),
    _port(pod("needs-9000-0", affinity=_arch("amd64")), 9000),
]


def archs(result: SchedulingResult) -> dict[str, set[str]]:
    """Each planned pod's possible architectures (of its claim's instance types)."""
    out: dict[str, set[str]] = {}
    for claim in result.node_claims:
        found = set()
        for it in claim.instance_types:
            req = it.requirements.get(ARCH)
            assert req is not None
            found.update(req.values)
        for p in claim.pods:
            out[p.key] = found
    return out


async def test_host_port_daemonsets_per_architecture_plan_alike(tmp_path: Path) -> None:
    live = await provisioned(OBJECTS)
    sim = simulated(OBJECTS, tmp_path).result
    assert plan_of(live) == plan_of(sim)
    assert live.errors == {}
    assert (
        archs(live)
        == archs(sim)
        == {
            f"{NS}/needs-8000-0": {"arm64"},
            f"{NS}/needs-9000-0": {"amd64"},
        }
    )
