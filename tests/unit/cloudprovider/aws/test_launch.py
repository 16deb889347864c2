"""The launch path's pure parts: user data per AMI family, launch template names and data,
fleet overrides (cheapest first, at most 60 types, one subnet per zone), capacity type, client
tokens, tags, and reading a fleet's answer."""

from __future__ import annotations

import base64
import email
import tomllib
from typing import Any

import pytest
import yaml

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.aws.v1.ec2nodeclass import SubnetStatus
from karpy.apis.v1.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, LABEL_CAPACITY_TYPE
from karpy.cloudprovider.aws.fleet import (
    MAX_INSTANCE_TYPES,
    LaunchGroup,
    capacity_type_for,
    client_token,
    fleet_request,
    overrides,
    parse_fleet_response,
    truncate,
    zonal_subnets,
)
from karpy.cloudprovider.aws.instances import instance_id_of, launch_tags
from karpy.cloudprovider.aws.launch import (
    block_device_mappings,
    launch_template_data,
    launch_template_name,
)
from karpy.cloudprovider.aws.userdata import (
    BootstrapOptions,
    Taint,
    al2_user_data,
    al2023_user_data,
    bottlerocket_user_data,
    user_data,
)
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirement, Requirements

OPTIONS = BootstrapOptions(
    cluster_name="prod",
    cluster_endpoint="https://ABC.gr7.us-east-1.eks.amazonaws.com",
    ca_bundle="Q0FCVU5ETEU=",
    cluster_cidr="10.100.0.0/16",
    max_pods=29,
    cluster_dns=("10.100.0.10",),
    labels={"karpenter.sh/nodepool": "default", "team": "a"},
    taints=(Taint(key="dedicated", value="gpu", effect="NoSchedule"),),
)


def nodeadm_part(text: str) -> dict[str, Any]:
    message = email.message_from_string(text)
    parts = [p for p in message.walk() if not p.is_multipart()]
    assert parts[-1].get_content_type() == "application/node.eks.aws"
    doc: dict[str, Any] = yaml.safe_load(str(parts[-1].get_payload()))
    return doc


def test_al2023_user_data_is_mime_with_a_node_config() -> None:
    text = al2023_user_data(OPTIONS)
    assert text.startswith("MIME-Version: 1.0\n")
    assert 'boundary="//"' in text
    doc = nodeadm_part(text)
    assert doc["apiVersion"] == "node.eks.aws/v1alpha1" and doc["kind"] == "NodeConfig"
    cluster = doc["spec"]["cluster"]
    assert cluster == {
        "name": "prod",
        "apiServerEndpoint": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificateAuthority": "Q0FCVU5ETEU=",
        "cidr": "10.100.0.0/16",
    }
    kubelet = doc["spec"]["kubelet"]
    assert kubelet["config"]["maxPods"] == 29
    assert kubelet["config"]["clusterDNS"] == ["10.100.0.10"]
    assert kubelet["config"]["registerWithTaints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]
    assert kubelet["flags"] == [
        "--node-labels=karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,team=a"
    ]


def test_al2023_keeps_the_users_parts_first() -> None:
    script = "#!/bin/bash\necho hello\n"
    text = al2023_user_data(BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": script}))
    parts = [p for p in email.message_from_string(text).walk() if not p.is_multipart()]
    assert [p.get_content_type() for p in parts] == [
        "text/x-shellscript",
        "application/node.eks.aws",
    ]
    assert "echo hello" in str(parts[0].get_payload())

    mime = al2023_user_data(BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": text}))
    again = [p for p in email.message_from_string(mime).walk() if not p.is_multipart()]
    assert [p.get_content_type() for p in again] == [
        "text/x-shellscript",
        "application/node.eks.aws",
        "application/node.eks.aws",
    ]


def test_bottlerocket_toml_merges_user_settings_under_karpys() -> None:
    custom = '[settings.kubernetes]\ncluster-name = "wrong"\nimage-gc-high-threshold-percent = 85\n'
    text = bottlerocket_user_data(
        BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": custom})
    )
    doc = tomllib.loads(text)
    k8s = doc["settings"]["kubernetes"]
    assert k8s["cluster-name"] == "prod"
    assert k8s["image-gc-high-threshold-percent"] == 85
    assert k8s["api-server"] == OPTIONS.cluster_endpoint
    assert k8s["cluster-certificate"] == "Q0FCVU5ETEU="
    assert k8s["max-pods"] == 29
    assert k8s["cluster-dns-ip"] == ["10.100.0.10"]
    assert k8s["node-labels"]["team"] == "a"
    assert k8s["node-labels"]["karpenter.sh/do-not-sync-taints"] == "true"
    assert k8s["node-taints"] == {
        "dedicated": ["gpu:NoSchedule"],
        "karpenter.sh/unregistered": [":NoExecute"],
    }


def test_custom_passes_through_and_unsupported_families_say_so() -> None:
    custom = BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": "raw"})
    assert user_data("Custom", custom) == "raw"
    with pytest.raises(ValueError, match="'Ubuntu': no user data"):
        user_data("Ubuntu", OPTIONS)


def test_windows_runs_start_eks_bootstrap_after_the_users_powershell() -> None:
    options = BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": "Write-Host hi"})
    # Karpenter's windows.go, line for line.
    assert user_data("Windows2022", options) == "\n".join(
        [
            "<powershell>",
            "Write-Host hi",
            "[string]$EKSBootstrapScriptFile = "
            '"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"',
            "& $EKSBootstrapScriptFile -EKSClusterName 'prod' "
            "-APIServerEndpoint 'https://ABC.gr7.us-east-1.eks.amazonaws.com' "
            "-Base64ClusterCA 'Q0FCVU5ETEU=' "
            "-KubeletExtraArgs '--node-labels=\"karpenter.sh/do-not-sync-taints=true,"
            'karpenter.sh/nodepool=default,team=a" '
            '--register-with-taints="dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute" '
            "--max-pods=29' "
            "-DNSClusterIP '10.100.0.10'",
            "</powershell>",
        ]
    )
    assert user_data("Windows2019", options) == user_data("Windows2025", options)


def test_al2_runs_bootstrap_sh_after_the_users_script() -> None:
    options = BootstrapOptions(
        **{
            **OPTIONS.__dict__,
            "custom_user_data": "#!/bin/bash\necho hi\n",
            "kubelet": {
                "kubeReserved": {"memory": "200Mi", "cpu": "100m"},
                "evictionHard": {"memory.available": "5%"},
                "cpuCFSQuota": False,
            },
        }
    )
    message = email.message_from_string(user_data("AL2", options))
    parts = [p for p in message.walk() if not p.is_multipart()]
    assert [p.get_content_type() for p in parts] == ["text/x-shellscript"] * 2
    assert parts[0].get_payload() == "#!/bin/bash\necho hi"
    # Karpenter's eksbootstrap.go, flag for flag.
    assert parts[1].get_payload() == (
        "#!/bin/bash -xe\n"
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
        "/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint "
        "'https://ABC.gr7.us-east-1.eks.amazonaws.com' --b64-cluster-ca 'Q0FCVU5ETEU=' \\\n"
        "--dns-cluster-ip '10.100.0.10' \\\n"
        "--use-max-pods false \\\n"
        "--kubelet-extra-args '"
        '--node-labels="karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,team=a" '
        '--register-with-taints="dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute" '
        "--max-pods=29 "
        '--kube-reserved="cpu=100m,memory=200Mi" --eviction-hard="memory.available<5%" '
        "--cpu-cfs-quota=false'"
    )
    bare = al2_user_data(BootstrapOptions(cluster_name="c", cluster_endpoint="https://c"))
    assert '--register-with-taints="karpenter.sh/unregistered:NoExecute"' in bare
    assert "--use-max-pods" not in bare
    assert "--b64-cluster-ca" not in bare and "--dns-cluster-ip" not in bare


def nodeclass(**spec: Any) -> EC2NodeClass:
    base: dict[str, Any] = {
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": "KarpenterNodeRole-prod",
    }
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default", "uid": "u-1", "generation": 1},
            "spec": {**base, **spec},
            "status": {
                "securityGroups": [{"id": "sg-1", "name": "nodes"}],
                "instanceProfile": "prod_123",
                "subnets": [{"id": "subnet-a", "zone": "us-east-1a"}],
                "amis": [],
            },
        }
    )


def test_launch_template_data_and_deterministic_names() -> None:
    nc = nodeclass(detailedMonitoring=True, metadataOptions={"httpPutResponseHopLimit": 2})
    tags = {"eks:eks-cluster-name": "prod"}
    data = launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags=tags)
    assert data["ImageId"] == "ami-1"
    assert data["IamInstanceProfile"] == {"Name": "prod_123"}
    assert data["Monitoring"] == {"Enabled": True}
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpProtocolIpv6": "disabled",
        "HttpPutResponseHopLimit": 2,
        "HttpTokens": "required",
        "InstanceMetadataTags": "disabled",
    }
    assert data["NetworkInterfaces"] == [{"DeviceIndex": 0, "Groups": ["sg-1"]}]
    assert data["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {"Encrypted": True, "VolumeType": "gp3", "VolumeSize": 20},
        }
    ]
    assert "NodeConfig" in base64.b64decode(data["UserData"]).decode()
    name = launch_template_name(data)
    assert name.startswith("karpenter.k8s.aws/")
    same = launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags=dict(tags))
    assert launch_template_name(same) == name
    other_ami = launch_template_data(nc, image_id="ami-2", bootstrap=OPTIONS, tags=tags)
    other_pods = launch_template_data(
        nc,
        image_id="ami-1",
        bootstrap=BootstrapOptions(**{**OPTIONS.__dict__, "max_pods": 58}),
        tags=tags,
    )
    assert len({name, launch_template_name(other_ami), launch_template_name(other_pods)}) == 3


def test_launch_template_needs_a_resolved_nodeclass() -> None:
    nc = nodeclass()
    assert nc.status is not None
    nc.status.security_groups = None
    with pytest.raises(ValueError, match=r"status\.securityGroups"):
        launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags={})


def test_block_devices_round_up_to_gib_and_bottlerocket_defaults() -> None:
    nc = nodeclass(
        blockDeviceMappings=[
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {"volumeSize": "100G", "volumeType": "gp3", "iops": 3000, "encrypted": True},
            }
        ]
    )
    mapped = block_device_mappings(nc.spec.block_device_mappings, "AL2023")
    assert mapped == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {"Encrypted": True, "Iops": 3000, "VolumeType": "gp3", "VolumeSize": 94},
        }
    ]
    assert [m["DeviceName"] for m in block_device_mappings(None, "Bottlerocket")] == [
        "/dev/xvda",
        "/dev/xvdb",
    ]


def itype(
    name: str,
    prices: dict[tuple[str, str], float],
    unavailable: frozenset[tuple[str, str]] = frozenset(),
) -> InstanceType:
    return InstanceType(
        name=name,
        capacity={"cpu": 2000, "pods": 29},
        offerings=[
            Offering(zone=z, capacity_type=ct, price=p, available=(z, ct) not in unavailable)
            for (z, ct), p in prices.items()
        ],
    )


SUBNETS = [
    SubnetStatus(id="subnet-a1", zone="us-east-1a"),
    SubnetStatus(id="subnet-a2", zone="us-east-1a"),
    SubnetStatus(id="subnet-b", zone="us-east-1b"),
]


def test_overrides_cheapest_first_one_subnet_per_zone() -> None:
    cheap = itype(
        "c",
        {
            ("us-east-1a", "on-demand"): 0.2,
            ("us-east-1b", "on-demand"): 0.1,
            ("us-east-1c", "on-demand"): 0.05,
        },
    )
    dear = itype("d", {("us-east-1a", "on-demand"): 0.3, ("us-east-1b", "on-demand"): 0.3})
    reqs = Requirements()
    subnets = zonal_subnets(SUBNETS)
    assert {z: s.id for z, s in subnets.items()} == {
        "us-east-1a": "subnet-a1",
        "us-east-1b": "subnet-b",
    }
    configs = overrides(
        [LaunchGroup("lt-2", "ami-2", [dear]), LaunchGroup("lt-1", "ami-1", [cheap])],
        reqs,
        CAPACITY_TYPE_ON_DEMAND,
        subnets,
    )
    assert [c["LaunchTemplateSpecification"]["LaunchTemplateName"] for c in configs] == [
        "lt-1",
        "lt-2",
    ]
    assert configs[0]["LaunchTemplateSpecification"]["Version"] == "$Latest"
    # us-east-1c has no subnet, so it is not offered.
    assert [
        (o["InstanceType"], o["AvailabilityZone"], o["SubnetId"]) for o in configs[0]["Overrides"]
    ] == [
        ("c", "us-east-1b", "subnet-b"),
        ("c", "us-east-1a", "subnet-a1"),
    ]
    assert configs[0]["Overrides"][0]["ImageId"] == "ami-1"
    zone_a = Requirements(
        [Requirement("topology.kubernetes.io/zone", complement=False, values=("us-east-1a",))]
    )
    only_a = overrides(
        [LaunchGroup("lt-1", "ami-1", [cheap])], zone_a, CAPACITY_TYPE_ON_DEMAND, subnets
    )
    assert [o["AvailabilityZone"] for o in only_a[0]["Overrides"]] == ["us-east-1a"]


def test_truncate_keeps_the_60_cheapest_available() -> None:
    types = [
        itype(f"t{i:03d}", {("us-east-1a", "spot"): 1000 - i, ("us-east-1a", "on-demand"): 2000})
        for i in range(100)
    ]
    types.append(
        itype(
            "gone", {("us-east-1a", "spot"): 0.001}, unavailable=frozenset({("us-east-1a", "spot")})
        )
    )
    chosen = truncate(types, Requirements(), CAPACITY_TYPE_SPOT)
    assert len(chosen) == MAX_INSTANCE_TYPES
    assert chosen[0].name == "t099" and chosen[-1].name == "t040"
    assert "gone" not in {t.name for t in chosen}


def test_capacity_type_prefers_spot_when_allowed_and_available() -> None:
    both = itype("m", {("us-east-1a", "spot"): 0.1, ("us-east-1a", "on-demand"): 0.2})
    assert capacity_type_for(Requirements(), [both]) == CAPACITY_TYPE_SPOT
    od_only = Requirements(
        [Requirement(LABEL_CAPACITY_TYPE, complement=False, values=("on-demand",))]
    )
    assert capacity_type_for(od_only, [both]) == CAPACITY_TYPE_ON_DEMAND
    no_spot = itype(
        "m",
        {("us-east-1a", "spot"): 0.1, ("us-east-1a", "on-demand"): 0.2},
        frozenset({("us-east-1a", "spot")}),
    )
    assert capacity_type_for(Requirements(), [no_spot]) == CAPACITY_TYPE_ON_DEMAND
    spot_only = Requirements([Requirement(LABEL_CAPACITY_TYPE, complement=False, values=("spot",))])
    assert capacity_type_for(spot_only, [no_spot]) is None


def test_fleet_request_and_client_token() -> None:
    token = client_token("default-abc", "uid-1")
    assert token == client_token("default-abc", "uid-1")
    assert token != client_token("default-abc", "uid-2")
    assert len(token) <= 64 and token.isascii()
    spot = fleet_request([], CAPACITY_TYPE_SPOT, {"a": "1"}, token=token, context="ctx")
    assert spot["Type"] == "instant" and spot["ClientToken"] == token
    assert spot["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert "OnDemandOptions" not in spot and spot["Context"] == "ctx"
    assert spot["TargetCapacitySpecification"] == {
        "DefaultTargetCapacityType": "spot",
        "TotalTargetCapacity": 1,
    }
    assert [t["ResourceType"] for t in spot["TagSpecifications"]] == ["instance", "volume", "fleet"]
    od = fleet_request([], CAPACITY_TYPE_ON_DEMAND, {}, token=token)
    assert "TagSpecifications" not in od
    assert od["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"} and "Context" not in od


def test_launch_tags_static_keys_win() -> None:
    nc = nodeclass(tags={"team": "a", "Name": "custom"})
    assert launch_tags("prod", nc, "default", "default-abc") == {
        "team": "a",
        "Name": "default-abc",
        "kubernetes.io/cluster/prod": "owned",
        "eks:eks-cluster-name": "prod",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/nodeclaim": "default-abc",
    }
    assert "karpenter.sh/nodeclaim" not in launch_tags("prod", nc, "default")


def test_parse_fleet_response() -> None:
    response = {
        "Instances": [
            {
                "InstanceIds": ["i-0abc"],
                "InstanceType": "m5.large",
                "Lifecycle": "spot",
                "LaunchTemplateAndOverrides": {
                    "Overrides": {
                        "AvailabilityZone": "us-east-1b",
                        "SubnetId": "subnet-b",
                        "ImageId": "ami-1",
                    }
                },
            }
        ],
        "Errors": [{"ErrorCode": "InsufficientInstanceCapacity"}],
    }
    instance, errors = parse_fleet_response(response)
    assert instance is not None
    assert (instance.instance_id, instance.zone, instance.capacity_type, instance.image_id) == (
        "i-0abc",
        "us-east-1b",
        "spot",
        "ami-1",
    )
    assert len(errors) == 1
    assert parse_fleet_response({"Errors": errors}) == (None, errors)
    assert instance_id_of("aws:///us-east-1b/i-0abc") == "i-0abc"
    assert instance_id_of("kwok://x") is None


RAID0 = BootstrapOptions(**{**OPTIONS.__dict__, "instance_store_policy": "RAID0"})


def test_raid0_is_set_up_by_each_familys_own_tool() -> None:
    # AL2023: nodeadm's local-disk strategy.
    assert nodeadm_part(user_data("AL2023", RAID0))["spec"]["instance"] == {
        "localStorage": {"strategy": "RAID0"}
    }
    assert "instance" not in nodeadm_part(user_data("AL2023", OPTIONS))["spec"]
    # AL2: bootstrap.sh's last flag, after the kubelet's arguments (as Karpenter writes it).
    script = user_data("AL2", RAID0)
    assert script.rstrip().split("\n")[-2] == "--local-disks raid0"
    assert "--local-disks" not in user_data("AL2", OPTIONS)
    # Bottlerocket: apiclient's ephemeral-storage, kept beside the user's own commands.
    user_toml = '[settings.bootstrap-commands.mine]\ncommands = [["apiclient", "set", "x=1"]]\n'
    options = BootstrapOptions(**{**RAID0.__dict__, "custom_user_data": user_toml})
    commands = tomllib.loads(user_data("Bottlerocket", options))["settings"]["bootstrap-commands"]
    assert commands["000-mount-instance-storage"] == {
        "commands": [
            ["apiclient", "ephemeral-storage", "init"],
            [
                "apiclient",
                "ephemeral-storage",
                "bind",
                "--dirs",
                "/var/lib/containerd",
                "/var/lib/kubelet",
                "/var/log/pods",
            ],
        ],
        "essential": True,
        "mode": "always",
    }
    assert commands["mine"] == {"commands": [["apiclient", "set", "x=1"]]}
    assert "bootstrap-commands" not in tomllib.loads(user_data("Bottlerocket", OPTIONS))["settings"]
    # Windows: no instance-store setup (nor in Karpenter); the user data is unchanged.
    assert user_data("Windows2022", RAID0) == user_data("Windows2022", OPTIONS)


IPV6 = BootstrapOptions(
    **{
        **OPTIONS.__dict__,
        "cluster_cidr": "fd12:3456:789a::/108",
        "cluster_dns": ("fd12:3456:789a::a",),
        "ip_family": "ipv6",
    }
)


def test_ipv6_clusters_get_the_ipv6_family_in_user_data_and_launch_template() -> None:
    config = nodeadm_part(user_data("AL2023", IPV6))["spec"]
    assert config["cluster"]["cidr"] == "fd12:3456:789a::/108"
    assert config["kubelet"]["config"]["clusterDNS"] == ["fd12:3456:789a::a"]
    al2 = user_data("AL2", IPV6)
    assert "--ip-family ipv6 \\\n--dns-cluster-ip 'fd12:3456:789a::a'" in al2
    # The family comes from the service CIDR even when the DNS IP is not known.
    no_dns = BootstrapOptions(**{**IPV6.__dict__, "cluster_dns": ()})
    assert "--ip-family ipv6" in user_data("AL2", no_dns)
    assert "--ip-family" not in user_data("AL2", OPTIONS)
    bottlerocket = tomllib.loads(user_data("Bottlerocket", IPV6))["settings"]["kubernetes"]
    assert bottlerocket["cluster-dns-ip"] == ["fd12:3456:789a::a"]

    nc = nodeclass(ipPrefixCount=2)
    v6 = launch_template_data(nc, image_id="ami-1", bootstrap=IPV6, tags={}, ip_family="ipv6")
    assert v6["NetworkInterfaces"] == [
        {
            "DeviceIndex": 0,
            "Groups": ["sg-1"],
            "Ipv4PrefixCount": 2,
            "PrimaryIpv6": True,
            "Ipv6AddressCount": 1,
        }
    ]
    v4 = launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags={}, ip_family="ipv4")
    assert v4["NetworkInterfaces"] == [{"DeviceIndex": 0, "Groups": ["sg-1"], "Ipv4PrefixCount": 2}]


def test_efa_interfaces_one_per_network_card_the_first_primary() -> None:
    nc = nodeclass()
    data = launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags={}, efa_interfaces=3)
    assert data["NetworkInterfaces"] == [
        {"DeviceIndex": 0, "Groups": ["sg-1"], "NetworkCardIndex": 0, "InterfaceType": "efa"},
        {"DeviceIndex": 1, "Groups": ["sg-1"], "NetworkCardIndex": 1, "InterfaceType": "efa"},
        {"DeviceIndex": 1, "Groups": ["sg-1"], "NetworkCardIndex": 2, "InterfaceType": "efa"},
    ]
    v6 = launch_template_data(
        nc, image_id="ami-1", bootstrap=IPV6, tags={}, ip_family="ipv6", efa_interfaces=2
    )
    assert all(i["PrimaryIpv6"] and i["Ipv6AddressCount"] == 1 for i in v6["NetworkInterfaces"])
    plain = launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags={})
    assert plain["NetworkInterfaces"] == [{"DeviceIndex": 0, "Groups": ["sg-1"]}]
    assert launch_template_name(data) != launch_template_name(plain)
