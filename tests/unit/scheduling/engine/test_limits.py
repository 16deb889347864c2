"""NodePool limits: the batch's NodeClaims may together become at most what the limits allow,
whatever the provider launches from their lists, but the limit is spent on what the pods need
rather than on the largest type each list happens to contain."""

from __future__ import annotations

from typing import Any

from karpy.scheduling.engine.model import NewNodeClaim, SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.pods import pod_view
from tests.unit.scheduling.engine.builders import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    OS,
    kwok,
    raw_pod,
    template,
)
from tests.unit.scheduling.engine.checker import check_plan

# manifests/examples/kwok/nodepool.yaml
LOCAL = [
    {"key": OS, "operator": "In", "values": ["linux"]},
    {"key": ARCH, "operator": "In", "values": ["amd64", "arm64"]},
    {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]},
]


def run(raws: list[dict[str, Any]], templates: list[Any], **kw: Any) -> SchedulingResult:
    inp = SchedulingInput(pods=[pod_view(r) for r in raws], templates=templates, **kw)
    result = schedule(inp)
    check_plan(inp, raws, result)
    return result


def local(**limits: int) -> Any:
    return template("local", types=kwok(), requirements=LOCAL, limits=limits)


def worst(claims: list[NewNodeClaim], resource: str) -> int:
    """What the claims may use of `resource` whatever the provider picks from their lists."""
    return sum(max(t.capacity.get(resource, 0) for t in c.instance_types) for c in claims)


def placed(result: SchedulingResult) -> int:
    return sum(len(c.pods) for c in result.node_claims)


def inflate(n: int, cpu: str = "1", memory: str = "1Gi") -> list[dict[str, Any]]:
    return [raw_pod(f"inflate-{i}", cpu=cpu, memory=memory) for i in range(n)]


def test_five_small_pods_fit_a_hundred_cpu_limit() -> None:
    # The kwok demo: the catalogue lists up to 256-vCPU types, so counting each NodeClaim as its
    # largest listed type refused the fifth pod.
    result = run(inflate(5), [local(cpu=100_000)])
    assert result.errors == {}
    assert placed(result) == 5
    assert worst(result.node_claims, "cpu") <= 100_000
    unlimited = run(inflate(5), [template("local", types=kwok(), requirements=LOCAL)])
    # Trimming drops large types, never the cheapest type that fits a NodeClaim's pods.
    assert sorted(c.instance_types[0].name for c in result.node_claims) == sorted(
        c.instance_types[0].name for c in unlimited.node_claims
    )
    for claim in result.node_claims:
        assert claim.instance_types == sorted(
            claim.instance_types, key=lambda t: (t.price(claim.requirements), t.name)
        ), "still cheapest first"


def test_a_limit_that_cannot_hold_every_pod_refuses_the_excess_by_name() -> None:
    result = run(inflate(40, cpu="3", memory="2Gi"), [local(cpu=100_000)])
    assert worst(result.node_claims, "cpu") <= 100_000
    assert result.errors, "120 vCPU of pods cannot fit a 100-CPU limit"
    assert placed(result) + len(result.errors) == 40
    # The limit is used, not wasted: 3-vCPU pods on at most 100 vCPU of nodes.
    assert placed(result) >= 28
    for why in result.errors.values():
        assert 'limits of nodepool "local"' in why and "cpu" in why


def test_pods_of_a_refused_node_are_repacked_onto_types_within_what_is_left() -> None:
    # The cheapest node for 20 one-CPU pods is bigger than the whole 8-CPU limit; the pods are
    # packed again onto types that fit, so a node's worth of them still launches.
    result = run(inflate(20), [local(cpu=8_000)])
    assert worst(result.node_claims, "cpu") <= 8_000
    assert placed(result) >= 6
    assert len(result.errors) == 20 - placed(result)


def test_existing_usage_counts_against_the_limit() -> None:
    result = run(inflate(5), [local(cpu=100_000)], pool_usage={"local": {"cpu": 90_000}})
    assert placed(result) == 5
    assert worst(result.node_claims, "cpu") <= 10_000
    full = run(inflate(5), [local(cpu=100_000)], pool_usage={"local": {"cpu": 100_000}})
    assert placed(full) == 0
    assert all('nodepool "local"' in why and "cpu" in why for why in full.errors.values())


def test_node_and_memory_limits() -> None:
    result = run(inflate(6, cpu="100", memory="3Gi"), [local(nodes=2)])
    assert len(result.node_claims) <= 2
    assert result.errors and all("nodes" in why for why in result.errors.values())
    mem = 64 * 1024**3
    result = run(inflate(30, cpu="1", memory="3Gi"), [local(memory=mem)])
    assert worst(result.node_claims, "memory") <= mem
    assert placed(result) >= 10
    assert all("memory" in why for why in result.errors.values())


def test_trimming_keeps_min_values() -> None:
    req = {"key": INSTANCE_TYPE, "operator": "Exists", "minValues": 8}
    pool = template("local", types=kwok(), requirements=[*LOCAL, req], limits={"cpu": 100_000})
    result = run(inflate(5), [pool])
    assert placed(result) == 5
    assert worst(result.node_claims, "cpu") <= 100_000
    for claim in result.node_claims:
        assert len({t.name for t in claim.instance_types}) >= 8
        assert not claim.min_values_relaxed


def test_lists_are_not_trimmed_when_the_limit_has_room() -> None:
    limited = run(inflate(3), [local(cpu=10_000_000)])
    unlimited = run(inflate(3), [template("local", types=kwok(), requirements=LOCAL)])
    assert [len(c.instance_types) for c in limited.node_claims] == [
        len(c.instance_types) for c in unlimited.node_claims
    ]
