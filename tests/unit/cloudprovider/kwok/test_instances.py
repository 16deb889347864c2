"""The kwok provider's choice of instance and the Node it makes; the metrics decorator."""

from __future__ import annotations

import builtins
from datetime import timedelta

import pytest

from karpy.apis.v1 import NodeClaim, NodePool
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.instances import node_for, node_name_of, plan, provider_id_of
from karpy.cloudprovider.metrics import CALLS, MetricsCloudProvider
from karpy.cloudprovider.types import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    RepairPolicy,
)
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirements

TYPES = kwok_instance_types()


def _reqs(*exprs: dict[str, object]) -> Requirements:
    return Requirements.from_node_selector_terms(exprs)


def test_plan_picks_the_cheapest_compatible_offering() -> None:
    choice = plan(
        _reqs({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}),
        {"cpu": 1500, "memory": 1024**3},
        TYPES,
    )
    assert choice.instance_type.name == "c-2x-amd64-linux"
    assert choice.offering.capacity_type == "spot"
    labels = choice.labels(_reqs({"key": "team", "operator": "In", "values": ["a"]}))
    assert labels["node.kubernetes.io/instance-type"] == "c-2x-amd64-linux"
    assert labels["karpenter.kwok.sh/instance-family"] == "c"
    assert labels["team"] == "a"
    assert labels["topology.kubernetes.io/zone"] == choice.offering.zone


def test_plan_honours_the_instance_type_list_zone_and_capacity_type() -> None:
    choice = plan(
        _reqs(
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": ["m-4x-arm64-linux"],
            },
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-c"]},
        ),
        {"cpu": 1000},
        TYPES,
    )
    assert choice.instance_type.name == "m-4x-arm64-linux"
    assert (choice.offering.capacity_type, choice.offering.zone) == ("on-demand", "test-zone-c")


def test_plan_without_a_fit_is_insufficient_capacity() -> None:
    with pytest.raises(InsufficientCapacityError):
        plan(_reqs(), {"cpu": 10_000_000}, TYPES)
    with pytest.raises(InsufficientCapacityError):
        plan(
            _reqs({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["mars"]}),
            {},
            TYPES,
        )


def test_node_shape() -> None:
    node = node_for(
        name="pool-abc",
        claim_uid="uid-1",
        node_labels={"kubernetes.io/arch": "arm64"},
        capacity={"cpu": 2000, "memory": 4 * 1024**3, "pods": 32},
        allocatable={"cpu": 1900, "memory": 4 * 1024**3, "pods": 32},
        now="2026-01-01T00:00:00Z",
    )
    assert node["spec"]["providerID"] == "kwok://pool-abc"
    assert node["spec"]["taints"] == [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "pool-abc"
    assert node["metadata"]["annotations"]["karpenter.kwok.sh/nodeclaim-uid"] == "uid-1"
    assert node["status"]["allocatable"]["cpu"] == "1900m"
    assert node["status"]["nodeInfo"]["architecture"] == "arm64"
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True"
    assert provider_id_of("x") == "kwok://x" and node_name_of("kwok://x") == "x"
    assert node_name_of("aws:///us-east-1a/i-1") is None


class _Provider:
    name = "fake"

    async def create(self, claim: NodeClaim) -> NodeClaim:
        raise InsufficientCapacityError("none")

    async def delete(self, claim: NodeClaim) -> None:
        raise NodeClaimNotFoundError("gone")

    async def get(self, provider_id: str) -> NodeClaim:
        raise RuntimeError("boom")

    async def list(self) -> builtins.list[NodeClaim]:
        return []

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        return []

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        return None

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return [RepairPolicy("Ready", "False", timedelta(minutes=1))]


def _count(method: str, outcome: str) -> float:
    value = CALLS.labels("fake", method, outcome)._value.get()
    return float(value)


async def test_metrics_decorator_counts_outcomes() -> None:
    provider = MetricsCloudProvider(_Provider())
    claim = NodeClaim.model_validate(
        {"spec": {"requirements": [], "nodeClassRef": {"group": "g", "kind": "K", "name": "n"}}}
    )
    before = (_count("create", "insufficient_capacity"), _count("delete", "not_found"))
    with pytest.raises(InsufficientCapacityError):
        await provider.create(claim)
    with pytest.raises(NodeClaimNotFoundError):
        await provider.delete(claim)
    with pytest.raises(RuntimeError):
        await provider.get("x")
    assert await provider.list() == []
    assert _count("create", "insufficient_capacity") == before[0] + 1
    assert _count("delete", "not_found") == before[1] + 1
    assert _count("get", "error") >= 1
    assert _count("list", "success") >= 1
    assert provider.name == "fake" and len(provider.repair_policies()) == 1
