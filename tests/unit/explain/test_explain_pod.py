"""`karpy explain pod` on listed objects: a NodePool whose NodeClass is not Ready is named as
such, the others by their first misfit."""

from __future__ import annotations

import io
from typing import Any

from karpy.explain.cluster import view_of
from karpy.explain.command import _table
from karpy.explain.pod import explain_pod
from karpy.simulation.live import KINDS
from tests.kit import node, nodepool, pod, schedulingconfig
from tests.kit import nodeclaim as kit_nodeclaim

JSON = dict[str, Any]
ARM: JSON = {"nodeSelector": {"kubernetes.io/arch": "arm64"}}
UNSCHEDULABLE: JSON = {
    "phase": "Pending",
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
}


def test_nodeclass_not_ready_and_requirement() -> None:
    waiting = nodepool("waiting")
    waiting["status"] = {
        "conditions": [
            {
                "type": "NodeClassReady",
                "status": "False",
                "reason": "NodeClassNotFound",
                "message": "KWOKNodeClass not found",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    amd = nodepool(
        "amd",
        requirements=[{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
    )
    pending = pod("arm", "ns", requests={"cpu": "1"}, spec=ARM, status=UNSCHEDULABLE)
    listed: dict[str, list[JSON]] = {k.plural: [] for k in KINDS}
    listed["nodepools"] = [waiting, amd]
    listed["pods"] = [pending]
    view = view_of(listed)
    assert not view.warnings
    answer = explain_pod(view, pending)
    got = {p["nodePool"]: p for p in answer["nodePools"]}
    assert answer["state"] == "pending"
    assert (got["waiting"]["reason"], got["waiting"]["object"]) == (
        "nodeclass-not-ready",
        "KWOKNodeClass/default",
    )
    assert got["amd"]["reason"] == "requirement"
    assert got["amd"]["object"] == "Requirement/kubernetes.io/arch"


def _row_of(answer: JSON, nodepool: str) -> str:
    """The table's row of a NodePool (`karpy explain pod -o table`)."""
    out = io.StringIO()
    _table(out, "pod", answer)
    return next(line for line in out.getvalue().splitlines() if line.startswith(nodepool + " "))


def _listed(**kinds: list[JSON]) -> dict[str, list[JSON]]:
    listed: dict[str, list[JSON]] = {k.plural: [] for k in KINDS}
    listed.update(kinds)
    return listed


ZONE = "topology.kubernetes.io/zone"
AMD64 = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
TAINT = {"key": "full", "value": "yes", "effect": "NoSchedule"}


def _zone_node(name: str, zone: str) -> JSON:
    """A Node no pending pod tolerates, whose zone still counts for spreads."""
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return node(
        name,
        labels={ZONE: zone, "kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64"},
        taints=[TAINT],
        status={
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    )


def test_topology_spread_names_the_constraint_and_its_key() -> None:
    zone_a = nodepool(
        "zone-a",
        requirements=[AMD64, {"key": ZONE, "operator": "In", "values": ["test-zone-a"]}],
    )
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    }
    web = {"app": "web"}
    running = pod("web-0", "ns", node="a-1", labels=web, requests={"cpu": "1"})
    pending = pod(
        "web-1", "ns", labels=web, requests={"cpu": "1"}, spec=spread, status=UNSCHEDULABLE
    )
    view = view_of(
        _listed(
            nodepools=[zone_a],
            nodes=[_zone_node("a-1", "test-zone-a"), _zone_node("b-1", "test-zone-b")],
            pods=[running, pending],
        )
    )
    answer = explain_pod(view, pending)
    row = answer["nodePools"][0]
    assert (row["nodePool"], row["fits"], row["reason"], row["object"]) == (
        "zone-a",
        False,
        "topology-spread",
        f"TopologySpreadConstraint/{ZONE}",
    ), answer
    assert "maxSkew 1" in row["detail"] and "maxSkew" in row["fix"]
    assert _row_of(answer, "zone-a").split()[2:4] == [row["reason"], row["object"]]


def test_pod_affinity_without_its_targets_names_the_term() -> None:
    amd = nodepool("amd", requirements=[AMD64])
    affinity = {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}
                ]
            }
        }
    }
    pending = pod("near-db", "ns", requests={"cpu": "1"}, spec=affinity, status=UNSCHEDULABLE)
    answer = explain_pod(view_of(_listed(nodepools=[amd], pods=[pending])), pending)
    row = answer["nodePools"][0]
    assert (row["reason"], row["object"]) == ("pod-affinity", f"PodAffinity/{ZONE}"), answer
    assert "app" in row["detail"] and "db" in row["detail"]
    assert _row_of(answer, "amd").split()[2:4] == [row["reason"], row["object"]]


def test_schedulingconfig_that_rules_a_nodepool_out_is_named() -> None:
    # `any` allows arm64 itself, the config does not; `arm` asks arm64 and the config leaves
    # it out of every plan
    any_arch = nodepool("any", requirements=[])
    arm_only = nodepool(
        "arm", requirements=[{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]
    )
    config = schedulingconfig("default", requirements=[AMD64])
    pending = pod("arm", "ns", requests={"cpu": "1"}, spec=ARM, status=UNSCHEDULABLE)
    view = view_of(
        _listed(nodepools=[any_arch, arm_only], schedulingconfigs=[config], pods=[pending])
    )
    answer = explain_pod(view, pending)
    got = {p["nodePool"]: p for p in answer["nodePools"]}
    for name in ("any", "arm"):
        assert (got[name]["reason"], got[name]["object"]) == (
            "schedulingconfig",
            "SchedulingConfig/default",
        ), answer
    assert "kubernetes.io/arch" in got["any"]["detail"]
    assert "is not used" in got["arm"]["detail"]
    for name in ("any", "arm"):
        assert _row_of(answer, name).split()[2:4] == [
            "schedulingconfig",
            "SchedulingConfig/default",
        ]


def test_bound_pod_names_the_plan_that_launched_its_node() -> None:
    from karpy.cloudprovider.kwok.catalog import kwok_instance_types
    from karpy.controllers.provisioning.nodeclaims import ANNOTATION_PLAN, plan_annotation
    from karpy.scheduling.engine.model import NewNodeClaim
    from karpy.scheduling.requirements import Requirements

    catalog = {t.name: t for t in kwok_instance_types()}
    # the plan lists its types cheapest first
    types = [catalog[n] for n in ("c-1x-amd64-linux", "m-1x-amd64-linux", "c-2x-amd64-linux")]
    reqs = Requirements.from_node_selector_terms(
        [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
    )
    planned = NewNodeClaim(
        nodepool="pool",
        requirements=reqs,
        instance_types=types,
        requests={},
        pods=[],
        offering=types[0].cheapest_offering(reqs),
        labels={},
    )
    batch = {"batch": "b-1", "pods": 3, "nodeClaims": 1, "cost": 0.03, "lowerBound": 0.03}
    value = plan_annotation(planned, {**batch, "optimal": True, "gap": 0.0})
    assert len(value) < 400  # small: it rides on every NodeClaim the provisioner launches
    labels = {
        "node.kubernetes.io/instance-type": "c-1x-amd64-linux",
        "topology.kubernetes.io/zone": "test-zone-a",
        "karpenter.sh/capacity-type": "on-demand",
    }
    claim = kit_nodeclaim(
        "pool-abc",
        annotations={ANNOTATION_PLAN: value},
        labels=labels,
        status={"providerID": "kwok://n1", "nodeName": "n1", "conditions": []},
    )
    bound_node = node(
        "n1",
        provider_id="kwok://n1",
        labels={**labels, "karpenter.sh/nodepool": "pool", "karpenter.sh/registered": "true"},
        status={"conditions": [{"type": "Ready", "status": "True"}]},
    )
    bound = pod("web", "ns", node="n1", requests={"cpu": "1"})
    view = view_of(
        _listed(nodepools=[nodepool()], nodeclaims=[claim], nodes=[bound_node], pods=[bound])
    )
    answer = explain_pod(view, bound)
    assert (answer["state"], answer["nodeClaim"]) == ("bound", "pool-abc"), answer
    plan = answer["plan"]
    assert (plan["batch"], plan["provenOptimal"], plan["gap"], plan["instanceTypes"]) == (
        "b-1",
        True,
        0.0,
        3,
    )
    cheapest = plan["alternatives"][0]
    assert cheapest["instanceType"] == "c-1x-amd64-linux"
    assert [a["pricePerHour"] for a in plan["alternatives"]] == sorted(
        a["pricePerHour"] for a in plan["alternatives"]
    )
    out = io.StringIO()
    _table(out, "pod", answer)
    text = out.getvalue()
    assert "plan: batch b-1 of 3 pod(s)" in text and "proven optimal" in text, text
    assert any(line.startswith("c-1x-amd64-linux") for line in text.splitlines()), text
