"""A StateNode joins a Node and its NodeClaim; before initialization the NodeClaim speaks."""

from __future__ import annotations

from functools import partial
from typing import Any

from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.pods import pod_view
from karpy.state import PodViews, StateNode, existing_node
from karpy.state.pods import is_provisionable, is_reschedulable
from tests import kit
from tests.kit import served

CLAIM: dict[str, Any] = {
    "metadata": {"name": "c1", "labels": {"karpenter.sh/nodepool": "p", "from": "claim"}},
    "spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]},
    "status": {
        "providerID": "kwok://c1",
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "10"},
        "allocatable": {"cpu": "3900m", "memory": "8Gi", "pods": "10"},
        "conditions": [{"type": "Launched", "status": "True"}],
    },
}


# Node c1 of CLAIM, still tainted by its boot.
c1 = partial(
    kit.node, "c1", provider_id="kwok://c1", taints=[{"key": "boot", "effect": "NoSchedule"}]
)
# A running pod on c1 asking for one CPU.
pod_on_c1 = partial(
    kit.pod, namespace="ns", node="c1", requests={"cpu": "1"}, status={"phase": "Running"}
)
DAEMONSET = {"kind": "DaemonSet", "name": "o", "uid": "u"}


def test_launched_claim_without_node_uses_the_claim() -> None:
    node = StateNode(key="kwok://c1", node=None, nodeclaim=CLAIM)
    assert node.name == "c1" and node.managed and not node.registered
    assert not node.initialized
    assert node.labels["from"] == "claim"
    assert node.allocatable == {"cpu": 3900, "memory": 8 * 1024**3, "pods": 10}
    assert node.taints == [{"key": "t", "effect": "NoSchedule"}]
    assert node.nodepool == "p"


def test_registered_but_uninitialized_fills_gaps_from_the_claim() -> None:
    node = StateNode(
        key="kwok://c1",
        node=c1(
            labels={"karpenter.sh/registered": "true", "from": "node"},
            status={"allocatable": {"cpu": "3"}},
        ),
        nodeclaim=CLAIM,
    )
    assert node.registered and not node.initialized
    assert node.labels["from"] == "node"
    assert node.allocatable["cpu"] == 3000
    assert node.allocatable["memory"] == 8 * 1024**3
    assert node.taints == [{"key": "t", "effect": "NoSchedule"}]


def test_initialized_node_speaks_for_itself() -> None:
    claim = {
        **CLAIM,
        "status": {**CLAIM["status"], "conditions": [{"type": "Initialized", "status": "True"}]},
    }
    node = StateNode(
        key="kwok://c1",
        node=c1(labels={"karpenter.sh/registered": "true"}, status={"allocatable": {"cpu": "2"}}),
        nodeclaim=claim,
        pods=(pod_on_c1("a"), pod_on_c1("ds", requests={"cpu": "500m"}, owner=DAEMONSET)),
    )
    assert node.initialized
    assert node.allocatable == {"cpu": 2000}
    assert node.taints == [{"key": "boot", "effect": "NoSchedule"}]
    assert node.pod_requests["cpu"] == 1500
    assert node.daemonset_requests["cpu"] == 500
    assert node.available["cpu"] == 500
    assert not node.is_empty()
    assert [p["metadata"]["name"] for p in node.reschedulable_pods()] == ["a"]


def test_deleting_and_marked() -> None:
    deleting = {
        **CLAIM,
        "metadata": {**CLAIM["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
    }
    assert StateNode(key="k", node=None, nodeclaim=deleting).marked_for_deletion
    assert StateNode(key="k", node=None, nodeclaim=CLAIM, marked=True).marked_for_deletion
    assert not StateNode(key="k", node=None, nodeclaim=CLAIM).marked_for_deletion
    unmanaged = c1(status={"allocatable": {"cpu": "1"}})
    assert StateNode(key="c1", node=unmanaged, nodeclaim=None).initialized


def test_empty_ignores_daemonsets_and_finished_pods_but_not_do_not_disrupt() -> None:
    done = pod_on_c1("done")
    done["status"]["phase"] = "Succeeded"
    node = StateNode(
        key="k", node=None, nodeclaim=CLAIM, pods=(pod_on_c1("ds", owner=DAEMONSET), done)
    )
    assert node.is_empty()
    pinned = pod_on_c1("pinned", annotations={"karpenter.sh/do-not-disrupt": "true"})
    node = StateNode(key="k", node=None, nodeclaim=CLAIM, pods=(pinned,))
    assert not node.is_empty()
    assert not is_reschedulable(pinned)


def test_provisionable_pods() -> None:
    pending = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {},
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        },
    }
    assert is_provisionable(pending)
    assert not is_provisionable({**pending, "spec": {"nodeName": "n"}})
    assert not is_provisionable(
        {**pending, "status": {**pending["status"], "nominatedNodeName": "n"}}
    )
    owned = {
        **pending,
        "metadata": {**pending["metadata"], "ownerReferences": [{"kind": "DaemonSet"}]},
    }
    assert not is_provisionable(owned)
    assert not is_provisionable({**pending, "status": {"conditions": []}})


def test_pod_views_are_cached_by_version_and_pruned() -> None:
    from karpy.state import PodViews

    views = PodViews()
    pod = served(pod_on_c1("a"), uid="u1")
    first = views.view(pod)
    assert views.view(pod) is first
    views.prune()
    assert len(views) == 1
    newer = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "2"}}
    assert views.view(newer) is not first
    views.prune()
    assert len(views) == 1, "the view of the old resourceVersion is gone"


def test_a_view_cache_without_entries_builds_each_view_afresh() -> None:
    """`karpy simulate` views each pod once: its cache keeps nothing."""
    from karpy.state import PodViews

    views = PodViews(max_entries=0)
    pod = served(pod_on_c1("a"), uid="u1")
    first = views.view(pod)
    again = views.view(pod)
    assert again is not first and again.signature == first.signature
    assert len(views) == 0


def test_pods_on_their_way_take_room_in_the_simulation() -> None:
    planned = served(pod_on_c1("planned", requests={"cpu": "3"}))
    planned["spec"].pop("nodeName")
    bound = served(pod_on_c1("bound", requests={"cpu": "500m"}))
    node = StateNode(key="kwok://c1", node=None, nodeclaim=CLAIM, pods=(bound,), planned=(planned,))
    existing = existing_node(node, PodViews())
    assert sorted(p.name for p in existing.pods) == ["bound", "planned"]
    assert node.available["cpu"] == 3400, "the node's own view counts bound pods only"

    def place(cpu: str) -> SchedulingResult:
        raw = served(pod_on_c1("new", requests={"cpu": cpu}), uid=f"new-{cpu}")
        raw["spec"] = {"containers": raw["spec"]["containers"], "tolerations": [{"key": "t"}]}
        new = pod_view(raw)
        return schedule(SchedulingInput(pods=[new], templates=[], existing_nodes=[existing]))

    # 3900m allocatable, 500m bound, 3 CPU planned: 400m left.
    assert [p.name for p in place("400m").existing["c1"]] == ["new"]
    refused = place("500m")
    assert refused.existing == {} and "ns/new" in refused.errors
