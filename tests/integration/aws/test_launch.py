"""EC2NodeClass resolution and the launch path against a moto server over HTTP: a VPC with
subnets in three zones and security groups tagged for discovery, the EKS-optimized AMI SSM
parameters (moto does not preload them, so they are seeded into the server's backend), an IAM
role. Resolve a NodeClass, launch a NodeClaim, retry it, inject ICE at the client seam, list,
get and delete.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ssm.models import Parameter, ssm_backends

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.v1 import NodeClaim
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.fleet import client_token, fleet_request
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo, instance_id_of
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.launch import LaunchTemplates
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.nodeclasshash import nodeclass_hash
from karpy.cloudprovider.aws.pricing import PricingProvider
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.cloudprovider.types import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from tests.integration.aws.conftest import REGION, CallCounter

CLUSTER = "prod"
K8S = "1.33"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}
ROLE = "KarpenterNodeRole-prod"
SERVICE_CIDR = "10.100.0.0/16"
AL2023 = "/aws/service/eks/optimized-ami/{k}/amazon-linux-2023/{a}/standard/recommended/image_id"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def seed_parameter(name: str, value: str) -> None:
    """Write a reserved `/aws/service/...` parameter into the server's backend (PutParameter
    refuses that prefix); ThreadedMotoServer shares state with this process."""
    backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]
    backend._parameters[name].append(
        Parameter(
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.now(UTC),
            version=1,
            data_type="aws:ec2:image",
        )
    )


@dataclass
class World:
    clients: AWSClients
    subnets: dict[str, str]
    security_group: str
    amis: dict[str, str]
    counter: CallCounter
    clock: Clock = field(default_factory=Clock)

    def resolver(self) -> NodeClassResolver:
        return NodeClassResolver(
            self.clients, cluster_name=CLUSTER, kubernetes_version=K8S, clock=self.clock
        )


async def first_image(clients: AWSClients, arch: str) -> str:
    async with clients.client("ec2") as ec2:
        images = await ec2.describe_images(
            Owners=["amazon"],
            Filters=[
                {"Name": "architecture", "Values": [arch]},
                {"Name": "name", "Values": ["al2023-ami-2023*"]},
            ],
        )
    return str(sorted(i["ImageId"] for i in images["Images"])[0])


@pytest.fixture
async def world(moto_endpoint: str, call_counter: CallCounter) -> World:
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=call_counter.hook)
    subnets: dict[str, str] = {}
    async with clients.client("ec2") as ec2:
        vpc = (await ec2.create_vpc(CidrBlock="10.0.0.0/16"))["Vpc"]["VpcId"]
        for i, zone in enumerate(ZONES):
            subnet = await ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.0.{i}.0/24",
                AvailabilityZone=zone,
                TagSpecifications=[
                    {
                        "ResourceType": "subnet",
                        "Tags": [{"Key": k, "Value": v} for k, v in DISCOVERY.items()],
                    }
                ],
            )
            subnets[zone] = subnet["Subnet"]["SubnetId"]
        group = await ec2.create_security_group(
            GroupName="nodes",
            Description="nodes",
            VpcId=vpc,
            TagSpecifications=[
                {
                    "ResourceType": "security-group",
                    "Tags": [{"Key": k, "Value": v} for k, v in DISCOVERY.items()],
                }
            ],
        )
        await ec2.create_security_group(GroupName="other", Description="other", VpcId=vpc)
    amis = {
        "amd64": await first_image(clients, "x86_64"),
        "arm64": await first_image(clients, "arm64"),
    }
    seed_parameter(AL2023.format(k=K8S, a="x86_64"), amis["amd64"])
    seed_parameter(AL2023.format(k=K8S, a="arm64"), amis["arm64"])
    async with clients.client("iam") as iam:
        await iam.create_role(
            RoleName=ROLE,
            AssumeRolePolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "ec2.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            ),
        )
    async with clients.client("eks") as eks:
        await eks.create_cluster(
            name=CLUSTER,
            version=K8S,
            roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/{CLUSTER}-cluster",
            resourcesVpcConfig={"subnetIds": list(subnets.values())},
            kubernetesNetworkConfig={"serviceIpv4Cidr": SERVICE_CIDR},
        )
    call_counter.calls.clear()
    return World(clients, subnets, str(group["GroupId"]), amis, call_counter)


def nodeclass_of(**spec: Any) -> EC2NodeClass:
    base: dict[str, Any] = {
        "subnetSelectorTerms": [{"tags": DISCOVERY}],
        "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": ROLE,
        "tags": {"team": "platform"},
    }
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default", "uid": "nc-uid-1", "generation": 3},
            "spec": {**base, **spec},
        }
    )


def conditions(result: Any) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in result.conditions}


async def test_resolve_nodeclass(world: World) -> None:
    result = await world.resolver().resolve(nodeclass_of())
    assert result.ready, conditions(result)
    assert sorted((s.zone, s.id) for s in result.subnets) == sorted(
        (z, s) for z, s in world.subnets.items()
    )
    assert all(s.zone_id and s.zone_id.startswith("use1-az") for s in result.subnets)
    assert [(g.id, g.name) for g in result.security_groups] == [(world.security_group, "nodes")]
    assert {a.id: a.requirements[0].values for a in result.amis} == {
        world.amis["amd64"]: ["amd64"],
        world.amis["arm64"]: ["arm64"],
    }
    assert result.instance_profile and result.instance_profile.startswith(f"{CLUSTER}_")
    assert set(conditions(result)) == {
        "AMIsReady",
        "SubnetsReady",
        "SecurityGroupsReady",
        "InstanceProfileReady",
        "CapacityReservationsReady",  # the ReservedCapacity gate is on by default
        "ValidationSucceeded",
        "Ready",
    }
    assert all(c.observed_generation == 3 for c in result.conditions)
    async with world.clients.client("iam") as iam:
        profile = (await iam.get_instance_profile(InstanceProfileName=result.instance_profile))[
            "InstanceProfile"
        ]
    assert [r["RoleName"] for r in profile["Roles"]] == [ROLE]
    assert profile["Path"] == f"/karpenter/{REGION}/{CLUSTER}/nc-uid-1/"


async def test_selectors_by_id_name_wildcard_and_tags(world: World) -> None:
    async with world.clients.client("ec2") as ec2:
        await ec2.create_tags(
            Resources=[world.amis["arm64"]], Tags=[{"Key": "golden", "Value": "yes"}]
        )
    nc = nodeclass_of(
        subnetSelectorTerms=[
            {"id": world.subnets["us-east-1b"]},
            {"tags": {"karpenter.sh/discovery": "*"}},
        ],
        securityGroupSelectorTerms=[{"name": "other"}, {"id": world.security_group}],
        amiSelectorTerms=[{"tags": {"golden": "yes"}}, {"id": world.amis["amd64"]}],
        amiFamily="AL2023",
        instanceProfile="existing-profile",
        role=None,
    )
    result = await world.resolver().resolve(nc)
    assert result.ready, conditions(result)
    assert len(result.subnets) == 3
    assert sorted(g.name or "" for g in result.security_groups) == ["nodes", "other"]
    assert sorted(a.id for a in result.amis) == sorted(world.amis.values())
    assert result.instance_profile == "existing-profile"


async def test_selectors_matching_nothing_name_the_selector(world: World) -> None:
    nc = nodeclass_of(
        subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "nope"}}],
        amiSelectorTerms=[{"alias": "bottlerocket@latest"}],
    )
    result = await world.resolver().resolve(nc)
    found = conditions(result)
    assert not result.ready
    assert found["SubnetsReady"][:2] == ("False", "SubnetsNotFound")
    assert '"karpenter.sh/discovery":"nope"' in found["SubnetsReady"][2]
    assert found["AMIsReady"][:2] == ("False", "AMINotFound")
    assert "bottlerocket@latest" in found["AMIsReady"][2]
    assert found["SecurityGroupsReady"][0] == "True"
    assert found["ValidationSucceeded"][:2] == ("False", "DependenciesNotReady")
    assert "AMIsReady" in found["ValidationSucceeded"][2]
    assert found["Ready"][0] == "False"


async def test_ssm_parameters_are_cached_for_24_hours(world: World) -> None:
    resolver = world.resolver()
    await resolver.amis(nodeclass_of().spec)
    first = world.counter.calls["ssm.GetParameter"]
    assert first == 5  # al2023: x86_64 standard/nvidia/neuron, arm64 standard/nvidia
    world.clock.now += 23 * 3600
    await resolver.amis(nodeclass_of().spec)
    assert world.counter.calls["ssm.GetParameter"] == first
    world.clock.now += 2 * 3600
    await resolver.amis(nodeclass_of().spec)
    assert world.counter.calls["ssm.GetParameter"] == 2 * first


# -- launch ------------------------------------------------------------------------------------


def claim_of(name: str = "default-abcde", uid: str = "claim-uid-1", **reqs: list[str]) -> NodeClaim:
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["m5.large", "m5.xlarge"],
        },
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
    ]
    for key, values in reqs.items():
        requirements.append(
            {"key": key.replace("__", "/").replace("_", "."), "operator": "In", "values": values}
        )
    return NodeClaim.model_validate(
        {
            "metadata": {"name": name, "uid": uid, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {
                "requirements": requirements,
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
            },
        }
    )


@dataclass
class Launcher:
    instances: AWSInstances
    nodeclass: EC2NodeClass
    types: list[Any]
    unavailable: UnavailableOfferings


@pytest.fixture(scope="module")
def catalog(moto_server: str) -> InstanceTypeProvider:
    """Instance types read once per module (moto's recorded EC2 data survives resets)."""
    clients = AWSClients(REGION, endpoint_url=moto_server)
    provider = InstanceTypeProvider(clients, PricingProvider(clients), UnavailableOfferings())
    asyncio.run(provider.refresh())
    return provider


@pytest.fixture
async def launcher(world: World, catalog: InstanceTypeProvider) -> Launcher:
    resolved = (await world.resolver().resolve(nodeclass_of())).apply(nodeclass_of())
    unavailable = UnavailableOfferings(clock=world.clock)
    catalog.unavailable = unavailable
    types = await catalog.for_nodeclass(resolved)
    instances = AWSInstances(
        world.clients,
        ClusterInfo(name=CLUSTER, endpoint="https://prod.example", ca_bundle="Q0E="),
        unavailable=unavailable,
        launch_templates=LaunchTemplates(world.clients, clock=world.clock),
    )
    world.counter.calls.clear()
    return Launcher(instances, resolved, types, unavailable)


async def describe(world: World, instance_id: str) -> dict[str, Any]:
    async with world.clients.client("ec2") as ec2:
        found = await ec2.describe_instances(InstanceIds=[instance_id])
    instance: dict[str, Any] = found["Reservations"][0]["Instances"][0]
    return instance


async def test_launch_one_instance_with_tags_type_and_zone(
    world: World, launcher: Launcher
) -> None:
    launched = await launcher.instances.create(claim_of(), launcher.nodeclass, launcher.types)
    assert launched.status is not None and launched.status.provider_id
    provider_id = launched.status.provider_id
    instance_id = instance_id_of(provider_id)
    assert instance_id is not None
    instance = await describe(world, instance_id)
    zone = instance["Placement"]["AvailabilityZone"]
    assert provider_id == f"aws:///{zone}/{instance_id}"
    assert zone in ZONES and instance["SubnetId"] == world.subnets[zone]
    assert instance["State"]["Name"] == "running"
    assert instance["InstanceType"] == "m5.large"  # the cheapest allowed type
    assert instance["ImageId"] == world.amis["amd64"] == launched.status.image_id
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert {k: v for k, v in tags.items() if not k.startswith("aws:")} == {
        "team": "platform",
        "Name": "default-abcde",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/nodeclaim": "default-abcde",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "eks:eks-cluster-name": CLUSTER,
    }
    labels = launched.metadata.labels or {}
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["topology.kubernetes.io/zone"] == zone
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["topology.k8s.aws/zone-id"].startswith("use1-az")
    assert launched.status.capacity and launched.status.capacity["pods"] == "29"
    # Stamped as Karpenter does at launch: the class's hash (with the CA bundle) and profile.
    assert launched.metadata.annotations == {
        "karpenter.k8s.aws/ec2nodeclass-hash": nodeclass_hash(launcher.nodeclass, "Q0E="),
        "karpenter.k8s.aws/ec2nodeclass-hash-version": "v6",
        "karpenter.k8s.aws/instance-profile-name": launcher.nodeclass.status.instance_profile,
    }
    assert launched.status.allocatable and launched.status.allocatable["memory"] == "6903Mi"

    # One template per (AMI, max pods): m5.large runs 29 pods, m5.xlarge 58.
    async with world.clients.client("ec2") as ec2:
        templates = (await ec2.describe_launch_templates())["LaunchTemplates"]
        assert len(templates) == 2
        assert all(t["LaunchTemplateName"].startswith("karpenter.k8s.aws/") for t in templates)
        datas = [
            (await ec2.describe_launch_template_versions(LaunchTemplateId=t["LaunchTemplateId"]))[
                "LaunchTemplateVersions"
            ][0]["LaunchTemplateData"]
            for t in templates
        ]
    status = launcher.nodeclass.status
    assert status is not None
    max_pods = set()
    for data in datas:
        assert data["ImageId"] == world.amis["amd64"]
        assert data["IamInstanceProfile"]["Name"] == status.instance_profile
        assert data["MetadataOptions"]["HttpTokens"] == "required"
        assert data["NetworkInterfaces"][0]["Groups"] == [world.security_group]
        node_config = base64.b64decode(data["UserData"]).decode()
        assert "name: prod" in node_config and "registerWithTaints" in node_config
        max_pods |= {line.strip() for line in node_config.splitlines() if "maxPods" in line}
    assert max_pods == {"maxPods: 29", "maxPods: 58"}


async def test_retry_with_the_same_nodeclaim_launches_nothing_new(
    world: World, launcher: Launcher
) -> None:
    first = await launcher.instances.create(claim_of(), launcher.nodeclass, launcher.types)
    second = await launcher.instances.create(claim_of(), launcher.nodeclass, launcher.types)
    assert first.status and second.status
    assert first.status.provider_id == second.status.provider_id
    assert world.counter.calls["ec2.CreateFleet"] == 1
    assert len(await launcher.instances.list()) == 1
    templates = world.counter.calls["ec2.CreateLaunchTemplate"]
    assert templates == 2  # m5.large and m5.xlarge differ in max pods
    # A second NodeClaim reuses the launch templates.
    await launcher.instances.create(
        claim_of("default-fghij", "claim-uid-2"), launcher.nodeclass, launcher.types
    )
    assert world.counter.calls["ec2.CreateLaunchTemplate"] == templates
    assert world.counter.calls["ec2.CreateFleet"] == 2
    assert len(await launcher.instances.list()) == 2


async def test_only_nodeclaims_a_process_may_have_launched_before_are_looked_up(
    world: World, launcher: Launcher
) -> None:
    """A NodeClaim created after this process's first launch costs one CreateFleet and no
    DescribeInstances; one created before (an earlier leader may have launched it) is looked up
    and its instance adopted, not launched again."""
    now = datetime.now(UTC)
    launcher.instances._wall = lambda: now
    older = claim_of("default-older", "uid-older")
    older.metadata.creation_timestamp = now - timedelta(minutes=10)
    first = await launcher.instances.create(older, launcher.nodeclass, launcher.types)
    assert world.counter.calls["ec2.DescribeInstances"] == 1
    assert world.counter.calls["ec2.CreateFleet"] == 1

    fresh = claim_of("default-fresh", "uid-fresh")
    fresh.metadata.creation_timestamp = now + timedelta(minutes=5)
    await launcher.instances.create(fresh, launcher.nodeclass, launcher.types)
    assert world.counter.calls["ec2.DescribeInstances"] == 1
    assert world.counter.calls["ec2.CreateFleet"] == 2

    # A new process (nothing sent yet) meets the older NodeClaim again: it adopts the instance.
    again = AWSInstances(
        world.clients,
        launcher.instances.cluster,
        unavailable=launcher.unavailable,
        wall=lambda: now + timedelta(minutes=1),
    )
    adopted = await again.create(older, launcher.nodeclass, launcher.types)
    assert adopted.status and first.status
    assert adopted.status.provider_id == first.status.provider_id
    assert world.counter.calls["ec2.CreateFleet"] == 2
    # The fresh one, sent by the first process, is looked up by it when asked again.
    await launcher.instances.create(fresh, launcher.nodeclass, launcher.types)
    assert world.counter.calls["ec2.CreateFleet"] == 2
    assert len(await launcher.instances.list()) == 2


async def test_lookups_of_a_burst_share_one_describe_and_each_adopts_its_own(
    world: World, launcher: Launcher
) -> None:
    """Launches of several NodeClaims an earlier leader may have launched, at once: one
    DescribeInstances for all their names; each adopts its own instance, and the one nobody
    launched gets a fleet."""
    now = datetime.now(UTC)
    launcher.instances._wall = lambda: now
    names = [f"default-old{i}" for i in range(3)]
    claims = [claim_of(name, f"uid-{name}") for name in names]
    for claim in claims:
        claim.metadata.creation_timestamp = now - timedelta(minutes=10)
    launched = [
        await launcher.instances.create(claim, launcher.nodeclass, launcher.types)
        for claim in claims[:2]
    ]
    assert world.counter.calls["ec2.CreateFleet"] == 2
    again = AWSInstances(
        world.clients,
        launcher.instances.cluster,
        unavailable=launcher.unavailable,
        wall=lambda: now + timedelta(minutes=1),
    )
    before = world.counter.calls["ec2.DescribeInstances"]
    results = await asyncio.gather(
        *(again.create(claim, launcher.nodeclass, launcher.types) for claim in claims)
    )
    assert world.counter.calls["ec2.DescribeInstances"] == before + 1
    assert world.counter.calls["ec2.CreateFleet"] == 3
    ids = [r.status.provider_id if r.status else None for r in results]
    assert ids[:2] == [r.status.provider_id if r.status else None for r in launched]
    assert ids[2] is not None and ids[2] not in ids[:2]


async def test_moto_ignores_client_token(world: World, launcher: Launcher) -> None:
    """Why `create` first looks for an instance tagged with the NodeClaim: moto launches again
    for a repeated CreateFleet ClientToken (EC2 would answer with the first fleet's instances)."""
    await launcher.instances.create(claim_of(), launcher.nodeclass, launcher.types)
    async with world.clients.client("ec2") as ec2:
        template = (await ec2.describe_launch_templates())["LaunchTemplates"][0]
        request = fleet_request(
            [
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateName": template["LaunchTemplateName"],
                        "Version": "$Latest",
                    },
                    "Overrides": [
                        {"InstanceType": "m5.large", "SubnetId": world.subnets[ZONES[0]]}
                    ],
                }
            ],
            "on-demand",
            {},
            token=client_token("same", "same"),
        )
        first = await ec2.create_fleet(**request)
        second = await ec2.create_fleet(**request)
    ids = {i for r in (first, second) for entry in r["Instances"] for i in entry["InstanceIds"]}
    assert len(ids) == 2


class InjectICE:
    """Answers every CreateFleet with InsufficientInstanceCapacity for each override requested
    (botocore `before-call` handlers may short-circuit a call with a response); the request's
    parameters are captured first."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def hook(self, service: str, client: Any) -> None:
        if service != "ec2":
            return

        def capture(params: dict[str, Any], **_: Any) -> None:
            self.requests.append(params)

        def answer(**_: Any) -> tuple[Any, dict[str, Any]]:
            overrides = [
                o for c in self.requests[-1]["LaunchTemplateConfigs"] for o in c["Overrides"]
            ]
            return _Http(), self.respond(overrides)

        client.meta.events.register("before-parameter-build.ec2.CreateFleet", capture)
        client.meta.events.register("before-call.ec2.CreateFleet", answer)

    def respond(self, overrides: list[dict[str, Any]]) -> dict[str, Any]:
        return {"FleetId": "fleet-ice", "Instances": [], "Errors": ice_errors(overrides)}


def ice_errors(overrides: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "ErrorCode": "InsufficientInstanceCapacity",
            "ErrorMessage": "We currently do not have sufficient capacity",
            "Lifecycle": "on-demand",
            "LaunchTemplateAndOverrides": {"Overrides": override},
        }
        for override in overrides
    ]


class PartialICE(InjectICE):
    """Launches nothing but answers with an instance of the first override and an ICE error
    for every other override (an `instant` fleet's partial answer)."""

    def respond(self, overrides: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "FleetId": "fleet-partial",
            "Instances": [
                {
                    "InstanceIds": ["i-0partial"],
                    "InstanceType": overrides[0]["InstanceType"],
                    "Lifecycle": "on-demand",
                    "LaunchTemplateAndOverrides": {"Overrides": overrides[0]},
                }
            ],
            "Errors": ice_errors(overrides[1:]),
        }


class _Http:
    status_code = 200
    headers: dict[str, str] = {}


async def test_insufficient_capacity_marks_offerings_and_is_retryable(
    world: World, launcher: Launcher, moto_endpoint: str
) -> None:
    ice = InjectICE()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=ice.hook)
    instances = AWSInstances(
        clients,
        launcher.instances.cluster,
        unavailable=launcher.unavailable,
        launch_templates=LaunchTemplates(clients),
    )
    with pytest.raises(InsufficientCapacityError, match=r"m5\.large, m5\.xlarge") as failure:
        await instances.create(claim_of(), launcher.nodeclass, launcher.types)
    assert "InsufficientInstanceCapacity" in str(failure.value)
    assert len(ice.requests) == 1
    assert ice.requests[0]["ClientToken"].startswith("karpy-")
    for name in ("m5.large", "m5.xlarge"):
        for zone in ZONES:
            assert launcher.unavailable.is_unavailable("on-demand", name, zone)
    assert not launcher.unavailable.is_unavailable("spot", "m5.large", ZONES[0])
    assert await instances.list() == []


async def test_delete_list_and_get(world: World, launcher: Launcher) -> None:
    a = await launcher.instances.create(claim_of(), launcher.nodeclass, launcher.types)
    b = await launcher.instances.create(
        claim_of("default-x", "uid-x"), launcher.nodeclass, launcher.types
    )
    async with world.clients.client("ec2") as ec2:  # not this cluster's: never listed
        await ec2.run_instances(
            ImageId=world.amis["amd64"], MinCount=1, MaxCount=1, InstanceType="t3.micro"
        )
    listed = await launcher.instances.list()
    assert sorted(c.name for c in listed) == ["default-abcde", "default-x"]
    assert all(c.spec.node_class_ref.name == "default" for c in listed)
    assert all((c.metadata.labels or {})["karpenter.sh/nodepool"] == "default" for c in listed)
    assert a.status and b.status and a.status.provider_id and b.status.provider_id
    got = await launcher.instances.get(a.status.provider_id)
    assert (
        got.status
        and got.status.provider_id == a.status.provider_id
        and got.name == "default-abcde"
    )

    await launcher.instances.delete(a)
    assert (await describe(world, instance_id_of(a.status.provider_id) or ""))["State"][
        "Name"
    ] == "terminated"
    with pytest.raises(NodeClaimNotFoundError):
        await launcher.instances.get(a.status.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        await launcher.instances.delete(a)
    with pytest.raises(NodeClaimNotFoundError):
        await launcher.instances.get("aws:///us-east-1a/i-0123456789abcdef0")
    assert [c.name for c in await launcher.instances.list()] == ["default-x"]


async def test_not_ready_nodeclass_is_refused(world: World, launcher: Launcher) -> None:
    unresolved = nodeclass_of()
    with pytest.raises(NodeClassNotReadyError, match="not ready"):
        await launcher.instances.create(claim_of(), unresolved, launcher.types)
    stale = launcher.nodeclass.model_copy(deep=True)
    stale.metadata.generation = 4
    with pytest.raises(NodeClassNotReadyError, match="generation"):
        await launcher.instances.create(claim_of(), stale, launcher.types)
    assert world.counter.calls["ec2.CreateFleet"] == 0


async def test_spot_arm64_launch_uses_the_arm64_ami(world: World, launcher: Launcher) -> None:
    claim = claim_of("default-spot", "uid-spot")
    claim.spec.requirements = [
        r
        for r in claim.spec.requirements
        if r.key not in ("karpenter.sh/capacity-type", "node.kubernetes.io/instance-type")
    ]
    extra = NodeClaim.model_validate(
        {
            "spec": {
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
                    {
                        "key": "karpenter.k8s.aws/instance-family",
                        "operator": "In",
                        "values": ["m6g"],
                    },
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"},
            }
        }
    )
    claim.spec.requirements += extra.spec.requirements
    launched = await launcher.instances.create(claim, launcher.nodeclass, launcher.types)
    labels = launched.metadata.labels or {}
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["kubernetes.io/arch"] == "arm64"
    assert labels["node.kubernetes.io/instance-type"].startswith("m6g.")
    assert launched.status and launched.status.image_id == world.amis["arm64"]
    instance = await describe(world, instance_id_of(launched.status.provider_id or "") or "")
    assert instance["ImageId"] == world.amis["arm64"]
    assert {t["Key"]: t["Value"] for t in instance["Tags"]}[
        "karpenter.sh/nodeclaim"
    ] == "default-spot"


async def test_ssm_parameter_term_is_read_again_after_5_minutes(world: World) -> None:
    async with world.clients.client("ssm") as ssm:
        await ssm.put_parameter(Name="/team/ami", Value=world.amis["amd64"], Type="String")
    resolver = world.resolver()
    nc = nodeclass_of(amiSelectorTerms=[{"ssmParameter": "/team/ami"}], amiFamily="AL2023")
    assert [a.id for a in await resolver.amis(nc.spec)] == [world.amis["amd64"]]
    async with world.clients.client("ssm") as ssm:
        await ssm.put_parameter(
            Name="/team/ami", Value=world.amis["arm64"], Type="String", Overwrite=True
        )
    world.clock.now += 4 * 60
    assert [a.id for a in await resolver.amis(nc.spec)] == [world.amis["amd64"]]
    world.clock.now += 2 * 60
    assert [a.id for a in await resolver.amis(nc.spec)] == [world.amis["arm64"]]


async def test_a_launch_template_deleted_behind_our_back_is_made_again(
    world: World, launcher: Launcher
) -> None:
    await launcher.instances.create(claim_of(), launcher.nodeclass, launcher.types)
    async with world.clients.client("ec2") as ec2:
        for template in (await ec2.describe_launch_templates())["LaunchTemplates"]:
            await ec2.delete_launch_template(LaunchTemplateId=template["LaunchTemplateId"])
    launched = await launcher.instances.create(
        claim_of("default-again", "uid-again"), launcher.nodeclass, launcher.types
    )
    assert launched.status and launched.status.provider_id
    assert world.counter.calls["ec2.CreateFleet"] == 3  # the first, the refused one, the retry
    assert world.counter.calls["ec2.CreateLaunchTemplate"] == 4


async def test_partial_errors_are_recorded_when_an_instance_launched(
    world: World, launcher: Launcher, moto_endpoint: str
) -> None:
    partial = PartialICE()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=partial.hook)
    instances = AWSInstances(clients, launcher.instances.cluster, unavailable=launcher.unavailable)
    launched = await instances.create(claim_of(), launcher.nodeclass, launcher.types)
    assert launched.status and launched.status.provider_id == "aws:///us-east-1a/i-0partial"
    assert not launcher.unavailable.is_unavailable("on-demand", "m5.large", "us-east-1a")
    assert launcher.unavailable.is_unavailable("on-demand", "m5.large", "us-east-1b")
    assert launcher.unavailable.is_unavailable("on-demand", "m5.xlarge", "us-east-1a")


async def test_types_too_small_for_the_requests_are_not_asked_for(
    world: World, launcher: Launcher
) -> None:
    claim = claim_of()
    claim.spec.resources = (
        type(claim.spec)
        .model_validate(
            {
                "requirements": [],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"},
                "resources": {"requests": {"memory": "10Gi"}},
            }
        )
        .resources
    )
    launched = await launcher.instances.create(claim, launcher.nodeclass, launcher.types)
    assert (launched.metadata.labels or {})["node.kubernetes.io/instance-type"] == "m5.xlarge"


async def test_concurrent_launches_look_each_template_up_once(
    world: World, launcher: Launcher
) -> None:
    await asyncio.gather(
        *(
            launcher.instances.create(
                claim_of(f"c-{i}", f"u-{i}"), launcher.nodeclass, launcher.types
            )
            for i in range(4)
        )
    )
    # Two templates (m5.large runs 29 pods, m5.xlarge 58), each looked up and made once.
    assert world.counter.calls["ec2.DescribeLaunchTemplates"] == 2
    assert world.counter.calls["ec2.CreateLaunchTemplate"] == 2
    # Their equal requests are merged (`FleetBatcher`).
    assert world.counter.calls["ec2.CreateFleet"] == 1
