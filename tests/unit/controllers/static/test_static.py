"""Static NodePools on constructed states: the NodeClaim a missing node gets, how NodeClaims
count (running vs deleting), the order the surplus goes in, and `StaticDrift`'s decisions
(budget, node limit, pending scale-down)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.apis.v1 import validate_nodepool
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.controllers.disruption.candidates import Candidate
from karpy.controllers.disruption.methods import Method, StaticDrift
from karpy.controllers.disruption.orchestration.marks import ANNOTATION_COMMAND
from karpy.controllers.static.claims import nodepool_counts, static_nodeclaim
from karpy.controllers.static.controller import (
    ANNOTATION_DEPROVISIONING_PRIORITY,
    StaticCapacityController,
)
from karpy.kube import NODES, PODS
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.transport import AiohttpTransport
from karpy.scheduling.instancetypes import InstanceType
from karpy.state import Cluster, StateNode
from tests.kit import kwok_nodeclass, nodepool, pod, ready_claim_conditions, served

JSON = dict[str, Any]
STAMP = "2026-01-01T00:00:00Z"
CPU4_ON_DEMAND = (
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.kwok.sh/instance-cpu", "operator": "In", "values": ["4"]},
)
RUNNING: JSON = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
_TYPES: list[InstanceType] = []


def types() -> list[InstanceType]:
    if not _TYPES:
        _TYPES.extend(kwok_instance_types())
    return _TYPES


def static_pool(
    replicas: int, *, limits: JSON | None = None, budgets: Sequence[JSON] | None = None
) -> JSON:
    pool = nodepool(
        "pool",
        requirements=CPU4_ON_DEMAND,
        labels={"team": "a"},
        limits=limits,
        budgets=budgets,
        ready=True,
    )
    pool["spec"]["replicas"] = replicas
    return served(pool)


def claim(
    name: str,
    *,
    pool: str = "pool",
    launched: bool = True,
    drifted: bool = False,
    deleting: bool = False,
    annotations: JSON | None = None,
) -> JSON:
    conds = ready_claim_conditions(STAMP) if launched else []
    if drifted:
        conds.append(
            {
                "type": "Drifted",
                "status": "True",
                "reason": "NodePoolDrifted",
                "lastTransitionTime": STAMP,
            }
        )
    meta: JSON = {
        "name": name,
        "creationTimestamp": STAMP,
        "labels": {"karpenter.sh/nodepool": pool},
        "annotations": dict(annotations or {}),
    }
    if deleting:
        meta["deletionTimestamp"] = STAMP
    status: JSON = {"conditions": conds}
    if launched:
        status.update(nodeName=name, providerID=f"kwok://{name}")
    obj = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta}
    return served({**obj, "status": status})


def node(name: str, *, pool: str = "pool") -> JSON:
    return served(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "karpenter.sh/nodepool": pool,
                    "karpenter.sh/registered": "true",
                    "karpenter.sh/initialized": "true",
                },
            },
            "spec": {"providerID": f"kwok://{name}"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
    )


def bound(name: str, on: str, **kw: Any) -> JSON:
    return served(pod(name, "ns", node=on, status=RUNNING, **kw))


class World:
    """A cluster state filled directly (as its reflectors would), with the kwok provider."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.cache = Cache(client)
        self.cluster = Cluster(self.cache)
        self.provider = KwokCloudProvider(client=client, cache=self.cache, instance_types=types())
        self.fill(KWOKNODECLASSES, [served(kwok_nodeclass("default"))])

    def fill(self, resource: Any, items: Sequence[JSON]) -> None:
        informer = self.cache.informer(resource)
        transform = informer.transform
        informer.replace([transform(dict(o)) if transform else dict(o) for o in items], "1")

    def state(self, pool: JSON, claims: Sequence[JSON], pods: Sequence[JSON] = ()) -> None:
        self.fill(NODEPOOLS, [pool])
        self.fill(NODECLAIMS, claims)
        launched = [c for c in claims if (c.get("status") or {}).get("providerID")]
        self.fill(NODES, [node(c["metadata"]["name"]) for c in launched])
        self.fill(PODS, pods)

    def candidate(self, name: str) -> Candidate:
        found: StateNode | None = self.cluster.node_for_nodeclaim(name)
        assert found is not None
        raw = self.cluster.nodepool_informer.get("pool")
        assert raw is not None
        return Candidate(node=found, nodepool=validate_nodepool(raw))


@pytest.fixture
async def world() -> AsyncIterator[World]:
    client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
    try:
        yield World(client)
    finally:
        await client.close()


# -- the NodeClaim of a missing node -----------------------------------------------------------


def test_static_nodeclaim_lists_every_allowed_type_cheapest_first() -> None:
    made = static_nodeclaim(static_pool(3), types())
    assert made is not None
    allowed = [t for t in types() if t.name.startswith(("c-4x-", "m-4x-", "s-4x-"))]
    allowed = [t for t in allowed if t.name.endswith("-linux")]
    assert {t.name for t in made.instance_types} == {t.name for t in allowed}
    prices = [t.price(made.requirements) for t in made.instance_types]
    assert prices == sorted(prices)
    assert made.requests == {} and made.pods == []
    assert made.labels["karpenter.sh/nodepool"] == "pool"
    assert made.labels["team"] == "a"
    assert made.labels["karpenter.sh/capacity-type"] == "on-demand"
    assert made.requirements["node.kubernetes.io/instance-type"].has(made.instance_types[0].name)


def test_static_nodeclaim_is_none_when_no_type_fits() -> None:
    pool = static_pool(1)
    pool["spec"]["template"]["spec"]["requirements"][2]["values"] = ["3"]
    assert static_nodeclaim(pool, types()) is None


# -- counts -------------------------------------------------------------------------------------


def test_deleting_and_commanded_claims_do_not_count_as_running() -> None:
    claims = [
        claim("a"),
        claim("b", deleting=True),
        claim("c", annotations={ANNOTATION_COMMAND: "cmd"}),
        claim("d"),
        claim("e", launched=False),
        claim("x", pool="other"),
    ]
    counts = nodepool_counts("pool", claims, marked={"d"})
    assert counts.running == ("a", "e")
    assert counts.deleting == ("b", "c", "d")
    assert counts.total == 5


# -- which surplus goes first -------------------------------------------------------------------


async def test_surplus_goes_unlaunched_then_empty_then_least_disruptive(world: World) -> None:
    claims = [
        claim("busy"),
        claim("cheap"),
        claim("empty"),
        claim("guarded"),
        claim("preferred", annotations={ANNOTATION_DEPROVISIONING_PRIORITY: "10"}),
        claim("unlaunched", launched=False),
    ]
    pods = [
        bound("b1", "busy"),
        bound("b2", "busy"),
        bound("c1", "cheap"),
        bound("g1", "guarded", annotations={"karpenter.sh/do-not-disrupt": "true"}),
        bound("p1", "preferred"),
        bound("p2", "preferred"),
    ]
    world.state(static_pool(1), claims, pods)
    controller = StaticCapacityController(
        client=world.client, cluster=world.cluster, cloud_provider=world.provider
    )
    running = controller.counts("pool").running
    assert controller.surplus_order(running) == [
        "unlaunched",
        "empty",
        "preferred",
        "cheap",
        "busy",
        "guarded",
    ]


# -- StaticDrift --------------------------------------------------------------------------------


def test_static_drift_is_a_method_for_drifted_static_nodes_only() -> None:
    method = StaticDrift(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
    assert isinstance(method, Method)
    assert method.reason == "Drifted" and not method.needs_validation


async def test_static_drift_replaces_one_drifted_node_from_the_template(world: World) -> None:
    world.state(static_pool(2, limits={"nodes": "3"}), [claim("a", drifted=True), claim("b")])
    method = StaticDrift(cluster=world.cluster, cloud_provider=world.provider)
    a, b = world.candidate("a"), world.candidate("b")
    assert method.should_disrupt(a) and not method.should_disrupt(b)
    command = await method.compute([a], {"pool": 1})
    assert [c.name for c in command.candidates] == ["a"]
    (replacement,) = command.replacements
    assert replacement.nodepool == "pool" and replacement.labels["team"] == "a"
    assert command.reason == "Drifted"


@pytest.mark.parametrize(
    ("replicas", "limits", "budget"),
    [(2, {"nodes": "2"}, 1), (1, None, 1), (2, None, 0)],
    ids=["at-node-limit", "scale-down-pending", "no-budget"],
)
async def test_static_drift_waits(
    world: World, replicas: int, limits: JSON | None, budget: int
) -> None:
    world.state(static_pool(replicas, limits=limits), [claim("a", drifted=True), claim("b")])
    method = StaticDrift(cluster=world.cluster, cloud_provider=world.provider)
    command = await method.compute([world.candidate("a")], {"pool": budget})
    assert command.is_noop


def test_dynamic_nodepools_are_not_static_drift_candidates() -> None:
    dynamic = validate_nodepool(nodepool("pool", requirements=CPU4_ON_DEMAND))
    state = StateNode(key="kwok://a", node=node("a"), nodeclaim=claim("a", drifted=True))
    method = StaticDrift(cluster=None, cloud_provider=None)  # type: ignore[arg-type]
    assert not method.should_disrupt(Candidate(node=state, nodepool=dynamic))
