"""Existing nodes: filled before anything is launched, in Karpenter's order, never over-committed.

Golden cases pin the order (initialized first, then by name) and the per-node rules that nodes
of one shape (same labels but the hostname, same taints) must still honour one by one: the
hostname itself, host ports, room. The property runs random clusters with many nodes sharing
few shapes through the independent checker, and checks that a pod only went to a new NodeClaim
when no existing node that admits it had room left for it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.scheduling.engine.model import ExistingNode, SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.pods import pod_view
from karpy.scheduling.taints import Taint
from tests.unit.scheduling.engine.builders import (
    ARCH,
    HOSTNAME,
    ZONE,
    anti_affinity,
    node,
    raw_pod,
    spread,
    template,
)
from tests.unit.scheduling.engine.checker import check_plan, node_affinity_ok, requests, tolerates

GI = 1024**3
ZONES = ["test-zone-a", "test-zone-b", "test-zone-c"]


def run(raws: list[dict[str, Any]], nodes: list[ExistingNode], **kw: Any) -> SchedulingResult:
    daemons = kw.pop("daemons", [])
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws],
        templates=kw.pop("templates", [template()]),
        existing_nodes=nodes,
        daemonset_pods=[pod_view(d, daemon=True) for d in daemons],
        **kw,
    )
    result = schedule(inp)
    check_plan(inp, raws, result, raw_daemons=daemons)
    return result


def placed_on(result: SchedulingResult) -> dict[str, str]:
    return {p.name: name for name, pods in result.existing.items() for p in pods}


def test_pods_fill_existing_nodes_before_any_new_nodeclaim() -> None:
    nodes = [node(f"n{i}", cpu=2000, memory=8 * GI) for i in range(3)]
    raws = [raw_pod(f"p{i}", cpu="1", memory="1Gi") for i in range(6)]
    result = run(raws, nodes)
    assert not result.node_claims
    assert {n: sorted(p.name for p in ps) for n, ps in result.existing.items()} == {
        "n0": ["p0", "p1"],
        "n1": ["p2", "p3"],
        "n2": ["p4", "p5"],
    }
    result = run([*raws, raw_pod("p6", cpu="1", memory="1Gi")], nodes)
    assert [p.name for c in result.node_claims for p in c.pods] == ["p6"]


def test_initialized_nodes_first_then_by_name_lowest_wins() -> None:
    nodes = [
        node("c", initialized=False),
        node("b"),
        node("a", initialized=False),
        node("d"),
    ]
    result = run([raw_pod("p", cpu="3")], nodes)
    assert placed_on(result) == {"p": "b"}
    # once b is full the next initialized node by name takes the rest, then the others
    raws = [raw_pod(f"p{i}", cpu="3") for i in range(4)]
    assert placed_on(run(raws, nodes)) == {"p0": "b", "p1": "d", "p2": "a", "p3": "c"}


def test_nodes_of_one_shape_are_still_judged_one_by_one() -> None:
    # same labels (bar the hostname) and taints: one shape, but room, hostname and host
    # ports differ per node
    full = pod_view(raw_pod("bound", cpu="3500m"))
    nodes = [node("n0", pods_=[full]), node("n1"), node("n2")]
    port = {"containerPort": 80, "hostPort": 8080}
    raws = [
        raw_pod("pinned", nodeSelector={HOSTNAME: "n2"}),
        raw_pod("big", cpu="1"),
        raw_pod("hp-0"),
        raw_pod("hp-1"),
    ]
    for raw in raws[2:]:
        raw["spec"]["containers"][0]["ports"] = [port]
    result = run(raws, nodes)
    assert not result.node_claims
    on = placed_on(result)
    assert on["pinned"] == "n2"
    assert on["big"] == "n1"  # n0 has 500m left
    assert {on["hp-0"], on["hp-1"]} == {"n0", "n1"}


def test_a_tainted_twin_is_skipped_and_a_selector_picks_its_nodes() -> None:
    nodes = [
        node("a-tainted", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        node("b-plain"),
        node("c-arm", labels={ARCH: "arm64"}),
    ]
    raws = [
        raw_pod("plain", cpu="1"),
        raw_pod("arm", cpu="1", nodeSelector={ARCH: "arm64"}),
        raw_pod("gpu", cpu="1", tolerations=[{"key": "gpu", "operator": "Exists"}]),
    ]
    assert placed_on(run(raws, nodes)) == {"plain": "b-plain", "arm": "c-arm", "gpu": "a-tainted"}


def test_an_unreachable_node_takes_no_pods() -> None:
    """Known ephemeral taints (not-ready, unreachable, ...) are ignored only on nodes still
    booting; the node lifecycle controller's taints on an initialized node keep pods off."""
    unreachable = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
    ]
    tolerate_eviction = [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    ]
    raws = [raw_pod("p", cpu="1", tolerations=tolerate_eviction)]
    result = run(raws, [node("a-lost", taints=unreachable)])
    assert not result.existing and [p.name for c in result.node_claims for p in c.pods] == ["p"]


def test_daemonset_pods_still_due_keep_their_room_on_existing_nodes() -> None:
    ds = raw_pod("ds", cpu="1", memory="64Mi", tolerations=[{"operator": "Exists"}])
    bound_ds = pod_view({**ds, "metadata": {**ds["metadata"], "name": "ds-n1"}}, daemon=True)
    nodes = [node("n0", cpu=1500), node("n1", cpu=2000, pods_=[bound_ds])]
    # n0 keeps 1 CPU for the DaemonSet pod it will still get, so 500m are left; n1 already
    # runs it and has 1 CPU left
    result = run([raw_pod("p0", cpu="1"), raw_pod("p1", cpu="1")], nodes, daemons=[ds])
    assert placed_on(result) == {"p0": "n1"}
    assert [p.name for c in result.node_claims for p in c.pods] == ["p1"]


def test_topology_counts_bound_pods_on_existing_nodes() -> None:
    labels = {"app": "web"}
    bound = [pod_view(raw_pod(f"web-b{i}", labels=labels)) for i in range(2)]
    nodes = [
        node("n0", pods_=bound[:1]),
        node("n1", pods_=bound[1:], labels={ZONE: "test-zone-b"}),
        node("n2", labels={ZONE: "test-zone-c"}),
    ]
    raws = [
        raw_pod("anti", labels=labels, affinity=anti_affinity(HOSTNAME, labels)),
        raw_pod("spread", labels=labels, topologySpreadConstraints=spread(ZONE, labels)),
    ]
    abc = {"key": ZONE, "operator": "In", "values": ZONES}
    on = placed_on(run(raws, nodes, templates=[template(requirements=[abc])]))
    # n2 is the only node without a web pod; then every zone holds one web pod, so any keeps
    # the skew and the first node in order wins
    assert on["anti"] == "n2"
    assert on["spread"] == "n0"


def test_each_spread_pod_tries_every_existing_node_from_the_first() -> None:
    # Karpenter tries every existing node for each pod: after one pod per zone the first
    # node's zone is within the skew again, so all six stay on the three nodes
    nodes = [node(f"n-{z}", labels={ZONE: f"test-zone-{z}"}) for z in "abc"]
    labels = {"app": "s"}
    raws = [
        raw_pod(f"s{i}", labels=labels, topologySpreadConstraints=spread(ZONE, labels))
        for i in range(6)
    ]
    abc = {"key": ZONE, "operator": "In", "values": ZONES}
    result = run(raws, nodes, templates=[template(requirements=[abc])])
    assert not result.node_claims
    assert {n: [p.name for p in ps] for n, ps in result.existing.items()} == {
        "n-a": ["s0", "s3"],
        "n-b": ["s1", "s4"],
        "n-c": ["s2", "s5"],
    }


def test_hostname_anti_affinity_takes_one_node_each_then_new_ones() -> None:
    labels = {"app": "db"}
    nodes = [node(f"n{i}") for i in range(3)]
    nodes.append(node("n3", pods_=[pod_view(raw_pod("db-old", labels=labels))]))
    raws = [
        raw_pod(f"db-{i}", labels=labels, affinity=anti_affinity(HOSTNAME, labels))
        for i in range(5)
    ]
    result = run(raws, nodes)
    assert placed_on(result) == {"db-0": "n0", "db-1": "n1", "db-2": "n2"}
    assert sorted(p.name for c in result.node_claims for p in c.pods) == ["db-3", "db-4"]
    assert len(result.node_claims) == 2


# ---- property ------------------------------------------------------------------------------

CPUS = [500, 1000, 1500, 2000]
SHAPE_CPUS = [2000, 4000]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[SchedulingInput, list[dict[str, Any]]]:
    """Up to 40 nodes from a handful of shapes, each partly used, and plain or constrained pods."""
    shapes = [
        (
            draw(st.sampled_from(SHAPE_CPUS)),
            draw(st.sampled_from(ZONES)),
            draw(st.sampled_from(["amd64", "arm64"])),
            draw(st.booleans()) and draw(st.booleans()),  # tainted
        )
        for _ in range(draw(st.integers(1, 4)))
    ]
    nodes = []
    for i in range(draw(st.integers(1, 40))):
        cpu, zone, arch, tainted = draw(st.sampled_from(shapes))
        bound = []
        used = 0
        for j in range(draw(st.integers(0, 2))):
            cpu_used = draw(st.sampled_from(CPUS))
            if used + cpu_used <= cpu:
                used += cpu_used
                bound.append(
                    pod_view(raw_pod(f"b{i}-{j}", cpu=f"{cpu_used}m", labels={"app": "w0"}))
                )
        nodes.append(
            ExistingNode(
                name=f"node-{i:02d}",
                labels={HOSTNAME: f"node-{i:02d}", ZONE: zone, ARCH: arch},
                allocatable={"cpu": cpu, "memory": 16 * GI, "pods": 110},
                pods=bound,
                taints=(Taint(key="dedicated", value="x", effect="NoSchedule"),) if tainted else (),
                initialized=draw(st.booleans()) or draw(st.booleans()),
            )
        )
    raws: list[dict[str, Any]] = []
    for w in range(draw(st.integers(1, 5))):
        app = {"app": f"w{w}"}
        kind = draw(st.sampled_from(["plain", "selector", "tolerant", "anti", "spread"]))
        spec: dict[str, Any] = {}
        if kind == "selector":
            spec["nodeSelector"] = {ARCH: draw(st.sampled_from(["amd64", "arm64"]))}
        elif kind == "tolerant":
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        elif kind == "anti":
            spec["affinity"] = anti_affinity(HOSTNAME, app)
        elif kind == "spread":
            spec["topologySpreadConstraints"] = spread(ZONE, app)
        cpu = f"{draw(st.sampled_from(CPUS))}m"
        for i in range(draw(st.integers(1, 25))):
            raws.append(raw_pod(f"w{w}-{i}", cpu=cpu, labels=dict(app), **spec))
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws],
        templates=[template()],
        existing_nodes=nodes,
    )
    return inp, raws


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_existing_nodes_are_exhausted_before_new_capacity(
    cluster: tuple[SchedulingInput, list[dict[str, Any]]],
) -> None:
    inp, raws = cluster
    result = schedule(inp)
    check_plan(inp, raws, result)
    by_name = {r["metadata"]["name"]: r for r in raws}
    free: dict[str, dict[str, int]] = {}
    for n in inp.existing_nodes:
        room = dict(n.allocatable)
        for p in [*n.pods, *result.existing.get(n.name, [])]:
            for k, v in p.requests.items():
                room[k] -= v
        assert all(v >= 0 for v in room.values()), f"{n.name} over-committed: {room}"
        free[n.name] = room
    # a plain, selector or tolerant pod (no topology) went to new capacity only when no
    # existing node that admits it had room for it, even at the end
    on_new: dict[str, list[str]] = defaultdict(list)
    for c in result.node_claims:
        for p in c.pods:
            raw = by_name[p.name]
            if "affinity" in raw["spec"] or "topologySpreadConstraints" in raw["spec"]:
                continue
            need = requests(raw)
            for n in inp.existing_nodes:
                labels = {HOSTNAME: n.name, **n.labels}
                if not node_affinity_ok(raw, labels):
                    continue
                if not all(tolerates(raw, t.to_dict()) for t in n.taints):
                    continue
                fits = all(free[n.name].get(k, 0) >= v for k, v in need.items())
                if fits:
                    on_new[p.name].append(n.name)
    assert not on_new, f"pods launched for although existing nodes had room: {dict(on_new)}"
