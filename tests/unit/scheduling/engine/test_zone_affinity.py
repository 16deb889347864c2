"""Required zonal pod affinity to pods pending in the same batch.

Karpenter places a pod whose affinity selects other pods only in a domain where a selected pod
runs or was placed; it takes the targets first when the queue order allows and otherwise
re-queues the pod, rather than opening a domain of its own (only a pod its own term selects
may do that). The affinity pods here request more CPU, so the queue reaches them first.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.pods import pod_view
from tests.unit.scheduling.engine.builders import ZONE, affinity, raw_pod, template
from tests.unit.scheduling.engine.checker import check_plan

ABC = {"key": ZONE, "operator": "In", "values": ["test-zone-a", "test-zone-b", "test-zone-c"]}


def _run(raws: list[dict[str, Any]]) -> SchedulingResult:
    """The heuristic's plan alone (the exact planners must not be what makes it right)."""
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws], templates=[template(requirements=[ABC])]
    )
    result = schedule(dataclasses.replace(inp, exact_seconds=0))
    check_plan(inp, raws, result)
    return result


def _zones(result: SchedulingResult, prefix: str) -> set[str]:
    out = set()
    for c in result.node_claims:
        if any(p.name.startswith(prefix) for p in c.pods):
            assert c.offering is not None
            out.add(c.offering.zone)
    return out


def _follower(name: str, target: str, cpu: str = "2") -> dict[str, Any]:
    return raw_pod(
        name, cpu=cpu, labels={"app": name.split("-")[0]}, affinity=affinity(ZONE, {"app": target})
    )


def test_affinity_pods_follow_targets_pinned_to_another_zone() -> None:
    raws = [_follower(f"web-{i}", "db") for i in range(4)]
    raws += [
        raw_pod(f"db-{i}", cpu="100m", labels={"app": "db"}, nodeSelector={ZONE: "test-zone-b"})
        for i in range(2)
    ]
    result = _run(raws)
    assert not result.errors
    assert _zones(result, "web-") == {"test-zone-b"}


def test_affinity_pods_share_the_zone_of_unconstrained_targets() -> None:
    raws = [_follower(f"web-{i}", "db") for i in range(6)]
    raws += [raw_pod(f"db-{i}", cpu="3", labels={"app": "db"}) for i in range(3)]
    raws += [raw_pod(f"db-small-{i}", cpu="100m", labels={"app": "db"}) for i in range(1)]
    result = _run(raws)
    assert not result.errors
    assert len(_zones(result, "db-")) == 1
    assert _zones(result, "web-") <= _zones(result, "db-")


def test_affinity_pods_wait_when_their_targets_cannot_be_placed() -> None:
    raws = [_follower(f"web-{i}", "db") for i in range(3)]
    raws += [raw_pod("db-0", cpu="100m", labels={"app": "db"}, nodeSelector={ZONE: "nowhere"})]
    result = _run(raws)
    assert not result.node_claims
    assert set(result.errors) == {"default/db-0", "default/web-0", "default/web-1", "default/web-2"}
    assert "pod affinity" in result.errors["default/web-0"]


def test_a_chain_of_affinities_is_placed_target_first() -> None:
    # front -> mid -> back, queued front first: each waits for the one it follows
    raws = [_follower(f"front-{i}", "mid", cpu="3") for i in range(2)]
    raws += [_follower(f"mid-{i}", "back", cpu="2") for i in range(2)]
    raws += [
        raw_pod(f"back-{i}", cpu="100m", labels={"app": "back"}, nodeSelector={ZONE: "test-zone-c"})
        for i in range(2)
    ]
    result = _run(raws)
    assert not result.errors
    assert _zones(result, "front-") == _zones(result, "mid-") == {"test-zone-c"}


def test_targets_still_place_when_no_node_offers_the_affinity_key() -> None:
    # targets are pinned for other pods' terms only; a key no pool offers must not strand them
    rack = "example.com/rack"
    raws = [
        raw_pod("web-0", cpu="2", labels={"app": "web"}, affinity=affinity(rack, {"app": "db"}))
    ]
    raws += [raw_pod("db-0", cpu="100m", labels={"app": "db"})]
    result = _run(raws)
    assert set(result.errors) == {"default/web-0"}
    assert [[p.name for p in c.pods] for c in result.node_claims] == [["db-0"]]
