"""The provisioner and `karpy simulate` plan alike: the same objects give the same plan.

Each case is a set of API objects. One path feeds them to the informer cache (through its
ingest transforms, as a watch would) and runs the provisioner's gather and solve steps with the
kwok provider; the other writes them to a scenario file and loads it as `karpy simulate` does.
Both plans are compared, and each case also checks the outcome it is about (a plan that
ignored volume topology on both paths would still be wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.provisioner import Provisioner
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.events import EventRecorder
from karpy.kube.resources import (
    DAEMONSETS,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODS,
    STORAGECLASSES,
    Resource,
)
from karpy.kube.transport import AiohttpTransport
from karpy.scheduling.engine import SchedulingResult, schedule
from karpy.scheduling.instancetypes import InstanceType
from karpy.simulation.scenario import load_scenario
from karpy.state import Cluster

JSON = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
NS = "apps"
_TYPES: list[InstanceType] = []

KINDS: dict[str, Resource] = {
    "Pod": PODS,
    "Node": NODES,
    "Namespace": NAMESPACES,
    "DaemonSet": DAEMONSETS,
    "PersistentVolumeClaim": PERSISTENTVOLUMECLAIMS,
    "PersistentVolume": PERSISTENTVOLUMES,
    "StorageClass": STORAGECLASSES,
    "NodePool": NODEPOOLS,
    "NodeClaim": NODECLAIMS,
    "KWOKNodeClass": KWOKNODECLASSES,
}


def types() -> list[InstanceType]:
    if not _TYPES:
        _TYPES.extend(kwok_instance_types())
    return _TYPES


# -- objects ------------------------------------------------------------------------------------


def nodepool(name: str = "default", *, taints: Sequence[JSON] = ()) -> JSON:
    spec: JSON = {
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "local"},
        "requirements": [
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ],
        "expireAfter": "720h",
    }
    if taints:
        spec["taints"] = list(taints)
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name, "uid": f"pool-{name}", "resourceVersion": "1"},
        "spec": {
            "template": {"spec": spec},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        },
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    }


NODECLASS: JSON = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "local", "uid": "nodeclass-local", "resourceVersion": "1"},
    "spec": {},
}


def pod(
    name: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    claims: Sequence[str] = (),
    node: str | None = None,
    **spec: Any,
) -> JSON:
    body: JSON = {
        "containers": [
            {
                "name": "c",
                "image": "pause",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
        **spec,
    }
    if claims:
        body["volumes"] = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        ]
    status: JSON = {"phase": "Pending"}
    if node:
        body["nodeName"] = node
        status = {"phase": "Running"}
    else:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": name.rsplit("-", 1)[0]},
        },
        "spec": body,
        "status": status,
    }


def node(name: str, *, zone: str, cpu: str = "4", taints: Sequence[JSON] = ()) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                ZONE: zone,
            },
        },
        "spec": {"taints": list(taints)},
        "status": {
            "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
        },
    }


def inflight_claim(name: str, *, zone: str) -> JSON:
    """A NodeClaim that was launched (it has a providerID) but whose Node has not registered."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {
                "karpenter.sh/nodepool": "default",
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                ZONE: zone,
            },
        },
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "local",
            },
            "requirements": [],
        },
        "status": {
            "providerID": f"kwok://{name}",
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Launched", "status": "True"}],
        },
    }


def claim(name: str, *, volume: str | None = None, storage_class: str | None = None) -> JSON:
    spec: JSON = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": spec,
    }


def zonal_volume(name: str, *, zones: Sequence[str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "csi": {"driver": "example.csi", "volumeHandle": name},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": list(zones)}
                            ]
                        }
                    ]
                }
            },
        },
    }


def storage_class(
    name: str, *, zones: Sequence[str], mode: str = "WaitForFirstConsumer", default: bool = False
) -> JSON:
    meta: JSON = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta,
        "provisioner": "example.csi",
        "volumeBindingMode": mode,
        "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}],
    }


def daemonset(name: str, *, cpu: str) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {"name": "d", "image": "agent", "resources": {"requests": {"cpu": cpu}}}
                    ],
                },
            },
        },
    }


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


# -- the two paths ------------------------------------------------------------------------------


def simulate_plan(objects: Sequence[JSON], tmp_path: Path) -> Plan:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all([o for o in objects if o["kind"] != "KWOKNodeClass"]))
    scenario = load_scenario([str(path)], instance_types=types())
    return plan_of(schedule(scenario.input))


async def provisioner_plan(objects: Sequence[JSON]) -> Plan:
    # The cache is filled directly, as its reflectors would after a list; nothing is requested
    # from the (absent) API server on the way to a plan.
    client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
    cache = Cache(client)
    cluster = Cluster(cache)
    provider = KwokCloudProvider(client=client, cache=cache, instance_types=types())
    by_resource: dict[Resource, list[JSON]] = {r: [] for r in KINDS.values()}
    for obj in objects:
        by_resource[KINDS[obj["kind"]]].append(obj)
    for resource, items in by_resource.items():
        informer = cache.informer(resource)
        transform = informer.transform
        informer.replace([transform(dict(o)) if transform else dict(o) for o in items], "1")
    provisioner = Provisioner(
        client=client,
        cluster=cluster,
        cloud_provider=provider,
        events=EventRecorder(client),
        batcher=Batcher(idle=1.0, maximum=10.0),
    )
    try:
        batch = await provisioner.gather()
        assert batch is not None, "the provisioner found nothing to provision"
        result, _ = provisioner.solve(batch)
        return plan_of(result)
    finally:
        await client.close()


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
    live = await provisioner_plan(case.objects)
    simulated = simulate_plan(case.objects, tmp_path)
    assert live == simulated
    case.check(live)
