"""DaemonSet overhead and host ports are grouped per instance type, as Karpenter groups them: a
DaemonSet counts on a type only when its own node affinity, node selector and tolerations admit
a node of that type from the NodePool. A DaemonSet pinned to one architecture neither costs
resources nor blocks host ports on the other architecture's types."""

from __future__ import annotations

from typing import Any

from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import pod_view
from karpy.state.inputs import ClusterObjects, build_input
from tests.kit import daemonset, served
from tests.unit.scheduling.engine.builders import ARCH, kwok, raw_pod, template
from tests.unit.scheduling.engine.checker import check_plan

NODE_LABEL = "testing/karpenter-node"


def linux() -> list[InstanceType]:
    return [t for t in kwok() if t.name.endswith("-linux")]


def arch_of(it: InstanceType) -> str:
    req = it.requirements.get(ARCH)
    assert req is not None and len(req.values) == 1
    return next(iter(req.values))


def arch_affinity(arch: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ARCH, "operator": "In", "values": [arch]}]}
                ]
            }
        }
    }


def with_port(raw: dict[str, Any], port: int) -> dict[str, Any]:
    [c] = raw["spec"]["containers"]
    c["ports"] = [{"containerPort": port, "hostPort": port}]
    return raw


def daemon(name: str, *, port: int | None = None, arch: str | None = None, **kw: Any) -> Any:
    """A DaemonSet pod selecting the NodePool's label, optionally pinned to one architecture."""
    raw = raw_pod(name, nodeSelector={NODE_LABEL: "true"}, **kw)
    if arch is not None:
        raw["spec"]["affinity"] = arch_affinity(arch)
    if port is not None:
        with_port(raw, port)
    return raw


def pod_on(name: str, arch: str, *, port: int | None = None, cpu: str = "100m") -> Any:
    raw = raw_pod(name, cpu=cpu, affinity=arch_affinity(arch))
    return with_port(raw, port) if port is not None else raw


def run(
    raws: list[dict[str, Any]], daemons: list[dict[str, Any]], **template_kw: Any
) -> SchedulingResult:
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws],
        templates=[template(types=linux(), labels={NODE_LABEL: "true"}, **template_kw)],
        daemonset_pods=[pod_view(d, daemon=True) for d in daemons],
    )
    result = schedule(inp)
    check_plan(inp, raws, result, raw_daemons=daemons)
    return result


def archs(result: SchedulingResult, pod_name: str) -> set[str]:
    """The architectures of the instance types the claim holding the pod may launch as."""
    [claim] = [c for c in result.node_claims if any(p.name == pod_name for p in c.pods)]
    return {arch_of(it) for it in claim.instance_types}


PORT_DAEMONS = [daemon("a", port=8000, arch="amd64"), daemon("b", port=9000, arch="arm64")]


def test_each_host_port_pod_goes_to_the_architecture_whose_daemonsets_leave_its_port_free() -> None:
    result = run(
        [pod_on("p8000", "arm64", port=8000), pod_on("p9000", "amd64", port=9000)], PORT_DAEMONS
    )
    assert result.errors == {}
    assert archs(result, "p8000") == {"arm64"}
    assert archs(result, "p9000") == {"amd64"}


def test_a_claim_never_lists_a_type_whose_daemonsets_take_the_pods_port() -> None:
    free = with_port(raw_pod("free"), 8000)
    result = run([free], PORT_DAEMONS)
    assert result.errors == {}
    # the amd64 types run DaemonSet a on port 8000: only arm64 types are left
    assert archs(result, "free") == {"arm64"}


def test_a_port_every_type_s_daemonsets_take_still_conflicts() -> None:
    daemons = [daemon("a", port=8000, arch="amd64"), daemon("b", port=8000, arch="arm64")]
    result = run([with_port(raw_pod("clash"), 8000)], daemons)
    assert "host ports conflict" in result.errors["default/clash"]
    assert not result.node_claims


def test_a_daemonset_the_pool_s_nodes_do_not_select_takes_no_port() -> None:
    other = daemon("other", port=8000)
    other["spec"]["nodeSelector"] = {NODE_LABEL: "false"}
    untolerated = daemon("untolerated", port=8000, tolerations=[])
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    tolerant = pod_on("p", "amd64", port=8000)
    tolerant["spec"]["tolerations"] = [{"operator": "Exists"}]
    result = run([tolerant], [other, untolerated], taints=taint)
    assert result.errors == {}
    assert archs(result, "p") == {"amd64"}


def test_overhead_counts_only_on_the_types_its_daemonset_runs_on() -> None:
    # a 3-vCPU agent on amd64 only: an amd64 pod's claim holds pod plus agent, an arm64 pod's
    # claim holds just the pod, so the smallest arm64 types stay in its list
    heavy = daemon("heavy", arch="amd64", cpu="3")
    result = run([pod_on("x86", "amd64", cpu="1"), pod_on("arm", "arm64", cpu="1")], [heavy])
    assert result.errors == {}
    by_pod = {c.pods[0].name: c for c in result.node_claims}
    assert by_pod["x86"].requests["cpu"] == 1000 + 3000
    assert all(it.allocatable["cpu"] >= 4000 for it in by_pod["x86"].instance_types)
    assert by_pod["arm"].requests["cpu"] == 1000
    assert min(it.allocatable["cpu"] for it in by_pod["arm"].instance_types) < 4000


def test_limit_range_defaults_of_a_daemonset_count_on_its_own_architecture_only() -> None:
    # the DaemonSet sets no requests; its namespace's LimitRange gives each container 3 vCPU
    agent = served(daemonset("agent", "kube-system"), uid="u-agent")
    spec = agent["spec"]["template"]["spec"]
    spec["affinity"] = arch_affinity("arm64")
    limit_range = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "kube-system"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "3"}}]},
    }
    pending = [
        served(pod_on(n, a, cpu="1"), uid=n) for n, a in (("x86", "amd64"), ("arm", "arm64"))
    ]
    built = build_input(
        ClusterObjects(
            pending=pending,
            daemonsets=[agent],
            limit_ranges=[limit_range],
            templates=[template(types=linux())],
        ),
        strict=True,
    )
    result = schedule(built.input)
    assert result.errors == {}
    by_pod = {c.pods[0].name: c for c in result.node_claims}
    assert by_pod["arm"].requests["cpu"] == 1000 + 3000
    assert by_pod["x86"].requests["cpu"] == 1000
