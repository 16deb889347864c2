"""`networkInterfaces` and `connectionTracking` against the moto server: the types that cannot
take them have no available offering, and the launch template EC2 stores carries the layout and
the timeouts."""

from __future__ import annotations

from typing import Any

from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.launch import LaunchTemplates
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    World,
    catalog,
    claim_of,
    conditions,
    nodeclass_of,
    world,
)


async def test_connection_tracking_launches_nitro_types_with_the_timeouts(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    spec = nodeclass_of(
        networkInterfaces=[{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}],
        connectionTracking={"tcpEstablishedTimeout": 3600},
    )
    result = await world.resolver().resolve(spec)
    assert result.ready, conditions(result)
    nodeclass = result.apply(spec)
    types = {it.name: it for it in await catalog.for_nodeclass(nodeclass)}
    assert catalog.infos["t2.large"]["Hypervisor"] == "xen"
    assert not any(o.available for o in types["t2.large"].offerings)
    assert any(o.available for o in types["m5.large"].offerings)

    instances = AWSInstances(
        world.clients,
        ClusterInfo(name="prod", endpoint="https://prod.example"),
        unavailable=catalog.unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
    )
    launched = await instances.create(claim_of(), nodeclass, list(types.values()))
    assert launched.status is not None and launched.status.provider_id
    async with world.clients.client("ec2") as ec2:
        templates = (await ec2.describe_launch_templates())["LaunchTemplates"]
        datas: list[dict[str, Any]] = [
            (await ec2.describe_launch_template_versions(LaunchTemplateId=t["LaunchTemplateId"]))[
                "LaunchTemplateVersions"
            ][0]["LaunchTemplateData"]
            for t in templates
        ]
    assert datas
    for data in datas:
        (interface,) = data["NetworkInterfaces"]
        assert interface["NetworkCardIndex"] == 0 and interface["DeviceIndex"] == 0
        assert interface["ConnectionTrackingSpecification"] == {"TcpEstablishedTimeout": 3600}
