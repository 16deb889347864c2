"""The test-only fault-injecting provider decorator and its plan grammar."""

from __future__ import annotations

import builtins

import pytest

from karpy.apis.v1 import NodeClaim, NodePool
from karpy.cloudprovider.faults import (
    ENV_VAR,
    FaultPlan,
    FaultPlanError,
    FaultyCloudProvider,
    from_env,
)
from karpy.cloudprovider.types import (
    CloudProvider,
    CloudProviderError,
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    RepairPolicy,
)
from karpy.scheduling.instancetypes import InstanceType


class Inner:
    """A provider that launches every claim as `inner://<name>`."""

    name = "inner"

    def __init__(self) -> None:
        self.created: list[str] = []
        self.deleted: list[str] = []

    async def create(self, claim: NodeClaim) -> NodeClaim:
        self.created.append(claim.name)
        return NodeClaim.model_validate(
            {**claim.to_dict(), "status": {"providerID": f"inner://{claim.name}"}}
        )

    async def delete(self, claim: NodeClaim) -> None:
        self.deleted.append(claim.name)
        raise NodeClaimNotFoundError("gone")

    async def get(self, provider_id: str) -> NodeClaim:
        raise NodeClaimNotFoundError(provider_id)

    async def list(self) -> builtins.list[NodeClaim]:
        return []

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        return []

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        return None

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return []


def claim(name: str = "c1") -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "p"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "d",
                },
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["b", "a"],
                    }
                ],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            },
        }
    )


def test_the_plan_grammar() -> None:
    plan = FaultPlan.parse(" create-error=2, never-register ,delete-error=1")
    assert (plan.create_errors, plan.never_register, plan.delete_errors) == (2, -1, 1)
    assert not FaultPlan.parse("")
    for bad, words in (
        ("explode", "unknown fault 'explode'"),
        ("create-error=two", "needs a whole number"),
        ("create-error=-1", "must not be negative"),
    ):
        with pytest.raises(FaultPlanError, match=words) as info:
            FaultPlan.parse(bad)
        assert ENV_VAR in str(info.value)


async def test_create_fails_the_given_number_of_times_then_passes_through() -> None:
    inner = Inner()
    provider = FaultyCloudProvider(inner=inner, plan=FaultPlan.parse("create-error=2"))
    assert isinstance(provider, CloudProvider)
    for _ in range(2):
        with pytest.raises(CreateError) as info:
            await provider.create(claim())
        assert info.value.reason == "FaultInjected"
    launched = await provider.create(claim())
    assert launched.status is not None and launched.status.provider_id == "inner://c1"
    assert inner.created == ["c1"]


async def test_insufficient_capacity_once() -> None:
    provider = FaultyCloudProvider(inner=Inner(), plan=FaultPlan.parse("insufficient-capacity=1"))
    with pytest.raises(InsufficientCapacityError):
        await provider.create(claim())
    await provider.create(claim())


async def test_never_register_launches_a_phantom_the_provider_still_knows() -> None:
    inner = Inner()
    provider = FaultyCloudProvider(inner=inner, plan=FaultPlan.parse("never-register=1"))
    phantom = await provider.create(claim())
    assert inner.created == []
    assert phantom.status is not None
    provider_id = phantom.status.provider_id
    assert provider_id == "phantom://c1"
    assert phantom.status.capacity == {"cpu": "1", "memory": "1Gi"}
    assert (phantom.metadata.labels or {})["node.kubernetes.io/instance-type"] == "a"
    assert (await provider.create(claim())).status.provider_id == "inner://c1"  # type: ignore[union-attr]
    assert (await provider.get(provider_id)).name == "c1"
    assert [c.status.provider_id for c in await provider.list()] == [provider_id]  # type: ignore[union-attr]
    with pytest.raises(NodeClaimNotFoundError):
        await provider.delete(phantom)
    assert await provider.list() == []
    assert inner.deleted == []


async def test_delete_errors_are_transient() -> None:
    inner = Inner()
    provider = FaultyCloudProvider(inner=inner, plan=FaultPlan.parse("delete-error=1"))
    with pytest.raises(CloudProviderError):
        await provider.delete(claim())
    with pytest.raises(NodeClaimNotFoundError):
        await provider.delete(claim())
    assert inner.deleted == ["c1"]


def test_from_env_wraps_only_when_asked() -> None:
    inner = Inner()
    assert from_env(inner, {}) is inner
    assert from_env(inner, {ENV_VAR: "  "}) is inner
    wrapped = from_env(inner, {ENV_VAR: "never-register"})
    assert isinstance(wrapped, FaultyCloudProvider)
    assert wrapped.name == "inner"
    with pytest.raises(FaultPlanError):
        from_env(inner, {ENV_VAR: "bogus"})
