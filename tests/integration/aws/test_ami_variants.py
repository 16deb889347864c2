"""AMI aliases and type filters against a moto server: the Bottlerocket alias launches a GPU
type with the NVIDIA image and a Neuron type with the standard one, an AL2 pinned version reads
its release parameters, AL2023 never launches an `a1` type, and a launch whose types cannot meet
a minValues after truncation fails with a reason and makes no CreateFleet call."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.launch import LaunchTemplates
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.cloudprovider.types import CreateError, InsufficientCapacityError
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    K8S,
    World,
    catalog,
    conditions,
    describe,
    nodeclass_of,
    seed_parameter,
    world,
)

BOTTLEROCKET = f"/aws/service/bottlerocket/aws-k8s-{K8S}"


def claim(name: str, *requirements: dict[str, Any]) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": name, "uid": f"uid-{name}"},
            "spec": {
                "requirements": [
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand"],
                    },
                    *requirements,
                ],
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
            },
        }
    )


def of_type(name: str, *types: str) -> NodeClaim:
    return claim(
        name, {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
    )


async def images(env: World, arch: str, count: int) -> list[str]:
    async with env.clients.client("ec2") as ec2:
        found = await ec2.describe_images(
            Owners=["amazon"], Filters=[{"Name": "architecture", "Values": [arch]}]
        )
    return sorted(i["ImageId"] for i in found["Images"])[:count]


async def ready(env: World, nodeclass: EC2NodeClass) -> EC2NodeClass:
    result = await env.resolver().resolve(nodeclass)
    assert result.ready, conditions(result)
    env.counter.calls.clear()  # the validation's dry runs are not launches
    return result.apply(nodeclass)


def instances(env: World) -> AWSInstances:
    return AWSInstances(
        env.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=UnavailableOfferings(clock=env.clock),
        launch_templates=LaunchTemplates(env.clients, clock=env.clock),
    )


async def test_bottlerocket_gpu_types_launch_with_the_nvidia_image(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    standard, nvidia = await images(world, "x86_64", 2)
    (arm,) = await images(world, "arm64", 1)
    seed_parameter(f"{BOTTLEROCKET}/x86_64/latest/image_id", standard)
    seed_parameter(f"{BOTTLEROCKET}-nvidia/x86_64/latest/image_id", nvidia)
    seed_parameter(f"{BOTTLEROCKET}/arm64/latest/image_id", arm)
    nodeclass = await ready(
        world, nodeclass_of(amiSelectorTerms=[{"alias": "bottlerocket@latest"}])
    )
    types = await catalog.for_nodeclass(nodeclass)
    launcher = instances(world)
    launched = {}
    for name in ("m5.large", "g4dn.xlarge", "inf2.xlarge"):
        nodeclaim = of_type(name.replace(".", "-"), name)
        out = await launcher.create(nodeclaim, nodeclass, types)
        assert out.status and out.status.provider_id
        instance = await describe(world, out.status.provider_id.rsplit("/", 1)[-1])
        assert instance["InstanceType"] == name
        launched[name] = instance["ImageId"]
    assert launched == {"m5.large": standard, "g4dn.xlarge": nvidia, "inf2.xlarge": standard}


async def test_al2_pinned_version_reads_the_release_parameters(
    world: World,  # noqa: F811
) -> None:
    amd64, gpu = await images(world, "x86_64", 2)
    (arm64,) = await images(world, "arm64", 1)
    base = f"/aws/service/eks/optimized-ami/{K8S}"
    seed_parameter(f"{base}/amazon-linux-2/amazon-eks-node-{K8S}-v20240625/image_id", amd64)
    seed_parameter(
        f"{base}/amazon-linux-2-arm64/amazon-eks-arm64-node-{K8S}-v20240625/image_id", arm64
    )
    seed_parameter(f"{base}/amazon-linux-2-gpu/amazon-eks-gpu-node-{K8S}-v20240625/image_id", gpu)
    nodeclass = await ready(world, nodeclass_of(amiSelectorTerms=[{"alias": "al2@v20240625"}]))
    amis = (nodeclass.status.amis if nodeclass.status else None) or []
    assert {a.id for a in amis} == {amd64, arm64, gpu}
    gpu_sets = [
        {r.key: r.operator for r in a.requirements if r.key != "kubernetes.io/arch"}
        for a in amis
        if a.id == gpu
    ]
    assert sorted(gpu_sets, key=str) == [
        {"karpenter.k8s.aws/instance-accelerator-count": "Exists"},
        {"karpenter.k8s.aws/instance-gpu-count": "Exists"},
    ]


async def test_al2023_never_launches_a1_types(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    nodeclass = await ready(world, nodeclass_of())
    types = await catalog.for_nodeclass(nodeclass)
    a1 = next(it for it in types if it.name == "a1.large")
    assert a1.offerings and not any(o.available for o in a1.offerings)
    with pytest.raises(InsufficientCapacityError):
        await instances(world).create(of_type("a1", "a1.large"), nodeclass, types)
    assert world.counter.calls["ec2.CreateFleet"] == 0
    launched = await instances(world).create(of_type("c6g", "c6g.large"), nodeclass, types)
    assert launched.status and launched.status.provider_id


async def test_min_values_the_truncated_types_cannot_meet_make_no_fleet_call(
    world: World,  # noqa: F811
    catalog: InstanceTypeProvider,  # noqa: F811
) -> None:
    nodeclass = await ready(world, nodeclass_of())
    types = await catalog.for_nodeclass(nodeclass)
    families = {
        "key": "karpenter.k8s.aws/instance-family",
        "operator": "In",
        "values": ["m5", "c5", "r5", "no9"],
        "minValues": 4,
    }
    with pytest.raises(
        CreateError, match=r'minValues of "karpenter\.k8s\.aws/instance-family"'
    ) as err:
        await instances(world).create(claim("strict", families), nodeclass, types)
    assert err.value.reason == "InstanceTypeFilteringFailed"
    assert world.counter.calls["ec2.CreateFleet"] == 0
    met = await instances(world).create(
        claim("met", {**families, "minValues": 3}), nodeclass, types
    )
    assert met.status and met.status.provider_id
