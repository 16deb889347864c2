"""NodeOverlay prices reach CreateFleet: the AWS provider, built as `karpy run` builds it, asks
EC2 for the prioritized allocation strategies with each override's Priority = its overlaid price
when an overlay priced a candidate, and sends today's price-driven request otherwise. The
request is captured at botocore's `before-parameter-build` event; moto then serves it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.plugin import build_aws_provider
from karpy.cloudprovider.aws.provider import AWSCloudProvider
from karpy.cloudprovider.overlays import LaunchOverlays
from karpy.settings import load_settings
from tests.integration.aws.conftest import REGION
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    World,
    claim_of,
    describe,
    nodeclass_of,
    world,
)


class CaptureFleet:
    """Records every CreateFleet's parameters and lets the call through."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def hook(self, service: str, client: Any) -> None:
        if service != "ec2":
            return

        def capture(params: dict[str, Any], **_: Any) -> None:
            self.requests.append(dict(params))

        client.meta.events.register("before-parameter-build.ec2.CreateFleet", capture)


def discount(instance_type: str, change: str, *, rejected: bool = False) -> dict[str, Any]:
    """A NodeOverlay as the API serves it (the controller's verdict in its status)."""
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": f"discount-{instance_type}", "resourceVersion": "1"},
        "spec": {
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": [instance_type],
                }
            ],
            "priceAdjustment": change,
        },
        "status": {
            "conditions": [
                {
                    "type": "ValidationSucceeded",
                    "status": "False" if rejected else "True",
                    "reason": "Conflict" if rejected else "ValidationSucceeded",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    }


@pytest.fixture
async def launch(
    world: World,  # noqa: F811
    moto_endpoint: str,
) -> AsyncIterator[tuple[AWSCloudProvider, CaptureFleet, list[dict[str, Any]]]]:
    """The provider with a NodeOverlay source the test fills, and the fleets it sends."""
    capture = CaptureFleet()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=capture.hook)
    overlays: list[dict[str, Any]] = []
    classes: dict[str, EC2NodeClass] = {}

    async def nodeclass_of_name(name: str) -> EC2NodeClass | None:
        return classes.get(name)

    settings = load_settings(
        {"PROVIDER": "aws", "CLUSTER_NAME": CLUSTER, "VM_MEMORY_OVERHEAD_PERCENT": "0.1"}
    )
    built = build_aws_provider(
        settings,
        clients=clients,
        cluster_endpoint="https://prod.example",
        kubernetes_version="1.33",
        nodeclass_of=nodeclass_of_name,
        overlays=LaunchOverlays(lambda: overlays),
    )
    assert built.resolver is not None
    classes["default"] = (await built.resolver.resolve(nodeclass_of())).apply(nodeclass_of())
    capture.requests.clear()  # the resolver's dry-run CreateFleet validates the class
    yield built, capture, overlays
    await built.close()


def overrides_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for c in request["LaunchTemplateConfigs"] for o in c["Overrides"]]


async def test_an_overlay_price_makes_the_fleet_prioritized_in_overlaid_price_order(
    world: World,  # noqa: F811
    launch: tuple[AWSCloudProvider, CaptureFleet, list[dict[str, Any]]],
) -> None:
    aws, capture, overlays = launch
    # m5.xlarge lists at twice m5.large's price; at -90% it is the cheaper one.
    overlays.append(discount("m5.xlarge", "-90%"))
    launched = await aws.create(claim_of())
    (request,) = capture.requests
    assert request["OnDemandOptions"] == {"AllocationStrategy": "prioritized"}
    assert "SpotOptions" not in request
    entries = overrides_of(request)
    assert {o["InstanceType"] for o in entries} == {"m5.large", "m5.xlarge"}
    priorities = [o["Priority"] for o in entries]
    assert priorities == sorted(priorities)
    by_type = {o["InstanceType"]: o["Priority"] for o in entries}
    assert by_type["m5.xlarge"] < by_type["m5.large"]
    assert entries[0]["InstanceType"] == "m5.xlarge"
    # moto served the request: an instance exists for the claim.
    assert launched.status is not None and launched.status.provider_id
    instance_id = launched.status.provider_id.rsplit("/", 1)[-1]
    assert (await describe(world, instance_id))["InstanceId"] == instance_id


async def test_without_an_overlay_price_the_fleet_request_is_unchanged(
    launch: tuple[AWSCloudProvider, CaptureFleet, list[dict[str, Any]]],
) -> None:
    aws, capture, overlays = launch
    # An overlay the NodeOverlay controller rejected does not apply either.
    overlays.append(discount("m5.xlarge", "-90%", rejected=True))
    await aws.create(claim_of())
    (request,) = capture.requests
    assert request["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    entries = overrides_of(request)
    assert all("Priority" not in o for o in entries)
    assert entries[0]["InstanceType"] == "m5.large"


async def test_an_overlay_on_a_spot_launch_asks_for_capacity_optimized_prioritized(
    launch: tuple[AWSCloudProvider, CaptureFleet, list[dict[str, Any]]],
) -> None:
    aws, capture, overlays = launch
    overlays.append(discount("m5.xlarge", "-90%"))
    claim = claim_of()
    (capacity_type,) = [r for r in claim.spec.requirements if r.key == "karpenter.sh/capacity-type"]
    capacity_type.values = ["spot"]
    await aws.create(claim)
    (request,) = capture.requests
    assert request["SpotOptions"] == {"AllocationStrategy": "capacity-optimized-prioritized"}
    assert "OnDemandOptions" not in request
    entries = overrides_of(request)
    assert entries[0]["InstanceType"] == "m5.xlarge"
    assert [o["Priority"] for o in entries] == sorted(o["Priority"] for o in entries)
