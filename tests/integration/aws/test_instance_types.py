"""Instance types with offerings from a moto server: DescribeInstanceTypes,
DescribeInstanceTypeOfferings, DescribeAvailabilityZones and DescribeSpotPriceHistory over HTTP,
turned into karpy's instance types; the ICE cache; the 12-hour refresh; ISOLATED_VPC."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

import pytest
from aiobotocore.config import AioConfig
from botocore.exceptions import ClientError

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.aws.v1.labels import LABEL_INSTANCE_CATEGORY, LABEL_TOPOLOGY_ZONE_ID
from karpy.apis.v1.labels import LABEL_ARCH
from karpy.cloudprovider.aws.capacity import MIB
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.pricing import PricingProvider
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.resources import CPU, MEMORY, PODS
from tests.integration.aws.conftest import REGION, CallCounter

HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Catalog:
    provider: InstanceTypeProvider
    unavailable: UnavailableOfferings
    clock: Clock
    clients: AWSClients


@pytest.fixture(scope="module")
def catalog(moto_server: str) -> Catalog:
    """One refresh against moto, shared by the module (the recorded EC2 data never changes)."""
    clock = Clock()
    clients = AWSClients(REGION, endpoint_url=moto_server)
    unavailable = UnavailableOfferings(clock=clock)
    provider = InstanceTypeProvider(clients, PricingProvider(clients), unavailable, clock=clock)
    asyncio.run(provider.refresh())
    return Catalog(provider, unavailable, clock, clients)


async def offered_zones(clients: AWSClients, name: str) -> set[str]:
    async with clients.client("ec2") as ec2:
        out = await ec2.describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": [name]}],
        )
    return {o["Location"] for o in out["InstanceTypeOfferings"]}


def by_name(types: list[InstanceType]) -> dict[str, InstanceType]:
    return {t.name: t for t in types}


async def test_types_and_offerings_come_from_ec2(catalog: Catalog) -> None:
    types = by_name(await catalog.provider.list())
    assert len(types) > 1000
    assert {next(iter(t.requirements[LABEL_ARCH].values)) for t in types.values()} == {
        "amd64",
        "arm64",
    }
    assert "t2.micro" in types  # i386 + x86_64 counts as x86_64
    assert not any(n.startswith("mac") for n in types)  # x86_64_mac / arm64_mac are not nodes
    m5 = types["m5.large"]
    assert m5.capacity[MEMORY] == 7577 * MIB and m5.capacity[PODS] == 29
    assert m5.allocatable[MEMORY] == 6903 * MIB and m5.allocatable[CPU] == 1930
    assert m5.requirements[LABEL_INSTANCE_CATEGORY].values == {"m"}
    sold = await offered_zones(catalog.clients, "m5.large")
    assert sold and sold <= set(catalog.provider.zones)
    available = {(o.zone, o.capacity_type) for o in m5.offerings if o.available}
    assert available == {(z, ct) for z in sold for ct in ("on-demand", "spot")}
    for o in m5.offerings:
        # moto's spot history is a stub: 0.00001 in every zone that sells the type; elsewhere
        # there is no spot record, so no spot price (Karpenter's rule once spot prices are known).
        spot = 0.00001 if o.zone in sold else math.inf
        assert o.price == (0.096 if o.capacity_type == "on-demand" else spot)
        zone_id = o.requirements.get(LABEL_TOPOLOGY_ZONE_ID)
        assert zone_id is not None and zone_id.values == {catalog.provider.zone_ids[o.zone]}
    assert m5.requirements[LABEL_TOPOLOGY_ZONE_ID].values == set(catalog.provider.zone_ids.values())


async def test_nodeclass_zones_limit_which_offerings_are_available(catalog: Catalog) -> None:
    m5 = by_name(await catalog.provider.list(zones={"us-east-1a"}))["m5.large"]
    assert {o.zone for o in m5.offerings if o.available} == {"us-east-1a"}
    assert len(m5.offerings) == 2 * len(catalog.provider.zones)  # unavailable ones stay listed


async def test_ice_excludes_an_offering_for_three_minutes(catalog: Catalog) -> None:
    catalog.unavailable.mark_unavailable("spot", "c5.large", "us-east-1a")

    def state() -> dict[tuple[str, str], bool]:
        return {(o.zone, o.capacity_type): o.available for o in c5.offerings}

    c5 = by_name(await catalog.provider.list())["c5.large"]
    before = state()
    assert before[("us-east-1a", "spot")] is False
    assert before[("us-east-1a", "on-demand")] is True
    assert before[("us-east-1b", "spot")] is True
    assert c5.cheapest_offering() is not None
    assert (c5.cheapest_offering().zone, c5.cheapest_offering().capacity_type) != (  # type: ignore[union-attr]
        "us-east-1a",
        "spot",
    )
    catalog.clock.now += 180
    c5 = by_name(await catalog.provider.list())["c5.large"]
    assert state()[("us-east-1a", "spot")] is True


async def test_lists_are_refreshed_every_12_hours(
    moto_endpoint: str, call_counter: CallCounter
) -> None:
    clock = Clock()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=call_counter.hook)
    provider = InstanceTypeProvider(
        clients, PricingProvider(clients), UnavailableOfferings(clock=clock), clock=clock
    )
    await provider.list()
    first = call_counter.calls["ec2.DescribeInstanceTypes"]
    assert first >= 1 and call_counter.calls["ec2.DescribeSpotPriceHistory"] >= 1
    clock.now += 11 * HOUR
    await provider.list()
    assert call_counter.calls["ec2.DescribeInstanceTypes"] == first
    clock.now += 1 * HOUR
    await provider.list()
    assert call_counter.calls["ec2.DescribeInstanceTypes"] == 2 * first
    assert await provider.refresh(force=True)
    assert call_counter.calls["ec2.DescribeInstanceTypes"] == 3 * first


async def test_isolated_vpc_never_calls_the_pricing_api(
    moto_endpoint: str, call_counter: CallCounter
) -> None:
    no_retries = AioConfig(retries={"max_attempts": 1, "mode": "standard"})
    clients = AWSClients(
        REGION, endpoint_url=moto_endpoint, on_client=call_counter.hook, config=no_retries
    )
    isolated = PricingProvider(clients, isolated_vpc=True)
    await isolated.refresh()
    assert call_counter.clients["pricing"] == 0
    assert call_counter.calls["ec2.DescribeSpotPriceHistory"] >= 1
    assert isolated.spot_price("m5.large", "us-east-1a") == 0.00001
    # Once spot prices are known, a zone without a record has no spot price (Karpenter's rule).
    assert isolated.spot_updated and isolated.spot_price("m5.large", "us-east-1-nowhere") is None
    assert isolated.on_demand_price("m5.large") == 0.096
    # Not isolated, the same refresh goes to the Price List API first (moto has none: 500).
    connected = PricingProvider(clients)
    with pytest.raises(ClientError):
        await connected.refresh()
    assert call_counter.calls["pricing.GetProducts"] == 1
    assert connected.on_demand_price("m5.large") == 0.096  # the shipped table is kept


async def test_a_nodeclass_shapes_capacity_and_zones(catalog: Catalog) -> None:
    nodeclass = EC2NodeClass.model_validate(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "role": "KarpenterNodeRole",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
                "kubelet": {"maxPods": 110},
            },
            "status": {
                "subnets": [
                    {"id": "subnet-1", "zone": "us-east-1b", "zoneID": "use1-az1"},
                    {"id": "subnet-2", "zone": "us-east-1c", "zoneID": "use1-az2"},
                ]
            },
        }
    )
    m5 = by_name(await catalog.provider.for_nodeclass(nodeclass))["m5.large"]
    assert m5.capacity[PODS] == 110
    # AL2023 keeps sizing kube-reserved memory by the ENI limit (29 pods).
    assert m5.allocatable[MEMORY] == 6903 * MIB
    assert {o.zone for o in m5.offerings if o.available} == {"us-east-1b", "us-east-1c"}
