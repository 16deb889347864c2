"""The dry-run validation against the moto server when EC2 does not yet see a new instance
profile (IAM's eventual consistency, injected at botocore's seam as EC2 answers it): the check
is retried with backoff and passes once EC2 sees the profile; while it does not, the class is not
Ready with InstanceProfileNotFound, and that answer is not cached for the validation TTL, so the
next reconcile checks again. A real denial is still cached."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.validation import RETRY_DELAYS, DryRunValidator
from tests.integration.aws.conftest import REGION
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    K8S,
    World,
    conditions,
    nodeclass_of,
    world,
)

NOT_YET = (
    "InvalidParameterValue",
    "Value (prod_123) for parameter iamInstanceProfile.name is invalid. "
    "Invalid IAM Instance Profile name",
)
DENIED = ("UnauthorizedOperation", "You are not authorized to perform this operation.")


class Faults:
    """Answers the next `left` ec2:CreateLaunchTemplate calls with `error` instead of EC2."""

    def __init__(self) -> None:
        self.left = 0
        self.error = NOT_YET
        self.calls = 0

    def hook(self, service: str, client: Any) -> None:
        if service == "ec2":
            client.meta.events.register("before-call.ec2.CreateLaunchTemplate", self._answer)

    def _answer(self, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        self.calls += 1
        if self.left <= 0:
            return None
        self.left -= 1
        code, message = self.error
        return AWSResponse(None, 400, {}, None), {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }


@pytest.fixture
def faults() -> Faults:
    return Faults()


def resolver_with(world: World, moto_endpoint: str, faults: Faults, sleeps: list[float]) -> Any:  # noqa: F811
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=faults.hook)
    resolver = NodeClassResolver(clients, cluster_name=CLUSTER, kubernetes_version=K8S)

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    resolver.validator = DryRunValidator(
        clients, cluster_name=CLUSTER, clock=world.clock, sleep=sleep
    )
    return resolver


async def test_iam_not_yet_consistent_is_retried_with_backoff_until_it_passes(
    world: World,  # noqa: F811
    moto_endpoint: str,
    faults: Faults,
) -> None:
    sleeps: list[float] = []
    resolver: NodeClassResolver = resolver_with(world, moto_endpoint, faults, sleeps)
    faults.left = 2
    result = await resolver.resolve(nodeclass_of())
    assert result.ready, conditions(result)
    assert sleeps == list(RETRY_DELAYS[:2])
    assert faults.calls == 3


async def test_a_lasting_inconsistency_is_not_ready_and_not_cached(
    world: World,  # noqa: F811
    moto_endpoint: str,
    faults: Faults,
) -> None:
    sleeps: list[float] = []
    resolver: NodeClassResolver = resolver_with(world, moto_endpoint, faults, sleeps)
    faults.left = 100
    result = await resolver.resolve(nodeclass_of())
    status, reason, message = conditions(result)["ValidationSucceeded"]
    assert (status, reason) == ("False", "InstanceProfileNotFound")
    assert "Invalid IAM Instance Profile name" in message and "checked again" in message
    assert not result.ready
    assert sleeps == list(RETRY_DELAYS)

    faults.left = 0  # EC2 sees the profile now; no time has passed on the validation clock
    result = await resolver.resolve(nodeclass_of())
    assert result.ready, conditions(result)


async def test_a_denial_is_still_a_cached_verdict(
    world: World,  # noqa: F811
    moto_endpoint: str,
    faults: Faults,
) -> None:
    sleeps: list[float] = []
    resolver: NodeClassResolver = resolver_with(world, moto_endpoint, faults, sleeps)
    faults.left, faults.error = 1, DENIED
    result = await resolver.resolve(nodeclass_of())
    assert conditions(result)["ValidationSucceeded"][1] == "CreateLaunchTemplateAuthCheckFailed"
    assert sleeps == []
    calls = faults.calls
    result = await resolver.resolve(nodeclass_of())
    assert conditions(result)["ValidationSucceeded"][1] == "CreateLaunchTemplateAuthCheckFailed"
    assert faults.calls == calls  # answered from the cache
