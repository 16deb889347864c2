"""The provisioner and `karpy simulate` plan alike: the same objects give the same plan.

Each case is a set of API objects, given to both paths (`tests.kit.parity`): the provisioner's
gather and solve steps over the informer cache, and `karpy simulate` over a scenario file.
Both plans are compared, and each case also checks the outcome it is about (a plan that
ignored volume topology on both paths would still be wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from karpy.scheduling.engine import SchedulingResult
from tests import kit
from tests.kit import LINUX_AMD64_ON_DEMAND, served
from tests.kit.parity import provisioned, simulated

JSON = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
NS = "apps"


# -- objects (tests.kit, served, with this suite's defaults) -------------------------------------


def nodepool(name: str = "default", *, taints: Sequence[JSON] = ()) -> JSON:
    return served(
        kit.nodepool(
            name,
            nodeclass="local",
            requirements=LINUX_AMD64_ON_DEMAND,
            taints=taints,
            expire_after="720h",
            ready=True,
        ),
        uid=f"pool-{name}",
    )


NODECLASS: JSON = served(kit.kwok_nodeclass("local"), uid="nodeclass-local")


def pod(
    name: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    claims: Sequence[str] = (),
    node: str | None = None,
    **spec: Any,
) -> JSON:
    """A pod of app `name` minus its ordinal; Running on `node`, else Pending and unschedulable
    (as kube-scheduler leaves the pods karpy provisions for)."""
    status: JSON = (
        {"phase": "Running"}
        if node
        else {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
    )
    return served(
        kit.pod(
            name,
            NS,
            node=node,
            labels={"app": name.rsplit("-", 1)[0]},
            requests={"cpu": cpu, "memory": memory},
            claims={f"v{i}": c for i, c in enumerate(claims)},
            created="2026-01-01T00:00:00Z",
            grace=None,
            spec=spec,
            status=status,
        ),
        uid=f"uid-{name}",
    )


def node(name: str, *, zone: str, cpu: str = "4", taints: Sequence[JSON] = ()) -> JSON:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        ZONE: zone,
    }
    room = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return served(
        kit.node(
            name, labels=labels, taints=taints, status={"capacity": room, "allocatable": room}
        ),
        uid=f"uid-{name}",
    )


def inflight_claim(name: str, *, zone: str) -> JSON:
    """A NodeClaim that was launched (it has a providerID) but whose Node has not registered."""
    room = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return served(
        kit.nodeclaim(
            name,
            pool="default",
            nodeclass="local",
            requirements=(),
            labels={"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", ZONE: zone},
            status={
                "providerID": f"kwok://{name}",
                "capacity": room,
                "allocatable": room,
                "conditions": [{"type": "Launched", "status": "True"}],
            },
        ),
        uid=f"uid-{name}",
    )


def claim(name: str, *, volume: str | None = None, storage_class: str | None = None) -> JSON:
    return served(kit.pvc(name, NS, volume=volume, storage_class=storage_class), uid=f"uid-{name}")


def zonal_volume(name: str, *, zones: Sequence[str]) -> JSON:
    return served(kit.pv(name, zone=zones, csi_driver="example.csi"), uid=f"uid-{name}")


def storage_class(
    name: str, *, zones: Sequence[str], mode: str = "WaitForFirstConsumer", default: bool = False
) -> JSON:
    return served(
        kit.storage_class(name, zones=zones, mode=mode, default=default), uid=f"uid-{name}"
    )


def daemonset(name: str, *, cpu: str) -> JSON:
    return served(kit.daemonset(name, requests={"cpu": cpu}), uid=f"uid-{name}")


NAMESPACE: JSON = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": NS, "uid": "uid-ns", "resourceVersion": "1", "labels": {"team": "a"}},
}
SPOT_TAINT: JSON = {"key": "example.com/dedicated", "value": "db", "effect": "NoSchedule"}
TOLERATE = [{"key": "example.com/dedicated", "operator": "Exists"}]

# -- the plan, comparable -----------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    claims: tuple[tuple[str, str, str, tuple[tuple[str, int], ...], tuple[str, ...]], ...]
    """(nodepool, zone, capacity type, requests, pods) of each new NodeClaim."""
    existing: tuple[tuple[str, tuple[str, ...]], ...]
    errors: tuple[str, ...]

    def zones(self) -> set[str]:
        return {c[1] for c in self.claims}

    def new_pods(self) -> set[str]:
        return {p for c in self.claims for p in c[4]}

    def on(self, node: str) -> tuple[str, ...]:
        return dict(self.existing).get(node, ())


def plan_of(result: SchedulingResult) -> Plan:
    claims = []
    for c in result.node_claims:
        assert c.offering is not None
        claims.append(
            (
                c.nodepool,
                c.offering.zone,
                c.offering.capacity_type,
                tuple(sorted(c.requests.items())),
                tuple(sorted(p.key for p in c.pods)),
            )
        )
    return Plan(
        claims=tuple(sorted(claims)),
        existing=tuple(
            sorted((n, tuple(sorted(p.key for p in ps))) for n, ps in result.existing.items() if ps)
        ),
        errors=tuple(sorted(result.errors)),
    )


# -- the cases ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    objects: list[JSON]
    check: Callable[[Plan], None]


def _zone_b_volume(plan: Plan) -> None:
    assert plan.zones() == {"test-zone-b"}
    assert plan.new_pods() == {f"{NS}/db-0"}


def _wffc_zone_c(plan: Plan) -> None:
    assert plan.zones() == {"test-zone-c"}
    assert plan.new_pods() == {f"{NS}/db-0", f"{NS}/db-1"}


def _default_class(plan: Plan) -> None:
    assert plan.zones() == {"test-zone-d"}


def _existing_first(plan: Plan) -> None:
    assert plan.on("n1") == (f"{NS}/web-0", f"{NS}/web-1")
    assert plan.claims == ()


def _volume_beats_existing(plan: Plan) -> None:
    # n1 (zone a) has room, but the volume is in zone b: only a new node there will do.
    assert plan.on("n1") == (f"{NS}/web-0",)
    assert plan.zones() == {"test-zone-b"}
    assert plan.new_pods() == {f"{NS}/db-0"}


def _daemonset_overhead(plan: Plan) -> None:
    assert len(plan.claims) == 1
    assert dict(plan.claims[0][3])["cpu"] == 2 * 1000 + 500


def _taints(plan: Plan) -> None:
    assert plan.on("tainted") == (f"{NS}/tolerant-0",)
    pools = {c[0]: c[4] for c in plan.claims}
    assert pools.get("default") == (f"{NS}/plain-0",)


def _inflight(plan: Plan) -> None:
    assert plan.on("claim-1") == (f"{NS}/db-0",)
    assert plan.claims == ()


def _inflight_wrong_zone(plan: Plan) -> None:
    assert plan.on("claim-1") == ()
    assert plan.zones() == {"test-zone-b"}


CASES = [
    Case(
        "bound-pv-in-zone-b",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            zonal_volume("pv-b", zones=["test-zone-b"]),
            claim("data-db-0", volume="pv-b", storage_class=""),
            pod("db-0", claims=["data-db-0"]),
        ],
        _zone_b_volume,
    ),
    Case(
        "wait-for-first-consumer-class-in-zone-c",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            storage_class("zonal", zones=["test-zone-c"]),
            claim("data-db-0", storage_class="zonal"),
            claim("data-db-1", storage_class="zonal"),
            pod("db-0", claims=["data-db-0"]),
            pod("db-1", claims=["data-db-1"]),
        ],
        _wffc_zone_c,
    ),
    Case(
        "claim-without-class-takes-the-default-class",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            storage_class("zonal-d", zones=["test-zone-d"], default=True),
            claim("data-db-0"),
            pod("db-0", claims=["data-db-0"]),
        ],
        _default_class,
    ),
    Case(
        "existing-node-takes-pods-first",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            node("n1", zone="test-zone-a"),
            pod("old-0", cpu="1", node="n1"),
            pod("web-0"),
            pod("web-1"),
        ],
        _existing_first,
    ),
    Case(
        "volume-zone-beats-room-on-an-existing-node",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            node("n1", zone="test-zone-a"),
            zonal_volume("pv-b", zones=["test-zone-b"]),
            claim("data-db-0", volume="pv-b"),
            pod("db-0", claims=["data-db-0"]),
            pod("web-0"),
        ],
        _volume_beats_existing,
    ),
    Case(
        "daemonset-overhead",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            daemonset("agent", cpu="500m"),
            pod("web-0"),
            pod("web-1"),
        ],
        _daemonset_overhead,
    ),
    Case(
        "taints-on-nodes-and-nodepools",
        [
            nodepool(),
            nodepool("dedicated", taints=[SPOT_TAINT]),
            NODECLASS,
            NAMESPACE,
            node("tainted", zone="test-zone-a", taints=[SPOT_TAINT]),
            pod("tolerant-0", tolerations=TOLERATE),
            pod("plain-0"),
        ],
        _taints,
    ),
    Case(
        "launched-nodeclaim-in-flight",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            inflight_claim("claim-1", zone="test-zone-b"),
            zonal_volume("pv-b", zones=["test-zone-b"]),
            claim("data-db-0", volume="pv-b"),
            pod("db-0", claims=["data-db-0"]),
        ],
        _inflight,
    ),
    Case(
        "nodeclaim-in-flight-in-the-wrong-zone",
        [
            nodepool(),
            NODECLASS,
            NAMESPACE,
            inflight_claim("claim-1", zone="test-zone-a"),
            zonal_volume("pv-b", zones=["test-zone-b"]),
            claim("data-db-0", volume="pv-b"),
            pod("db-0", claims=["data-db-0"]),
        ],
        _inflight_wrong_zone,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_provisioner_and_simulate_plan_alike(case: Case, tmp_path: Path) -> None:
    live = plan_of(await provisioned(case.objects))
    assert live == plan_of(simulated(case.objects, tmp_path).result)
    case.check(live)
