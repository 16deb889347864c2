"""`karpy run` with PROVIDER=aws against moto: the launch templates it stores are what real nodes
need to join. moto's EKS cluster has the control plane's service CIDR, and the control plane a
kube-dns Service. For the seed EC2NodeClass (AL2023) and a Bottlerocket class with
`kubelet.kubeReserved`, each NodePool labelled `node-restriction.kubernetes.io/fenced`, the
templates' user data carry the CIDR (AL2023), the registration taint, the NodePool's taint, the
kubelet settings and the kube-dns IP, and no `node-restriction.kubernetes.io` label, which the
Node gets when it registers."""

from __future__ import annotations

import base64
import email
import ipaddress
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import yaml
from controlplane import SERVICE_CIDR
from kubetest import Kubectl

from tests.e2e.aws_kubelets import Kubelets, node_name
from tests.e2e.conftest import KarpyFactory
from tests.e2e.support import kube_dns_service, nodeclaims, wait_for, wait_nodepool_ready
from tests.e2e.test_aws import CREDENTIALS, REGION, REPO, _lower
from tests.e2e.test_aws_interruption import moto  # noqa: F401  (fixture: reset before and after)

FENCED = "node-restriction.kubernetes.io/fenced"
REGISTRATION = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
KUBE_RESERVED = {"cpu": "200m", "memory": "500Mi"}


@pytest.fixture
def kube_dns(kubectl: Kubectl) -> Iterator[str]:
    """The kube-dns Service every EKS cluster has; its ClusterIP."""
    with kube_dns_service(kubectl) as address:
        yield address


def nodeclass(name: str, family: str, ami: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "amiFamily": family,
            "amiSelectorTerms": [{"id": ami}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            **spec,
        },
    }


def nodepool(name: str, nodeclass_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {FENCED: "true"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": nodeclass_name,
                    },
                    "taints": [{"key": "dedicated", "value": name, "effect": "NoSchedule"}],
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-category",
                            "operator": "In",
                            "values": ["m"],
                        },
                    ],
                },
            },
        },
    }


def pod(name: str, namespace: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": pool},
            "tolerations": [{"key": "dedicated", "value": pool, "effect": "NoSchedule"}],
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        },
    }


def user_data_of_templates(endpoint: str) -> dict[str, list[str]]:
    """The decoded user data of every launch template moto stores, by EC2NodeClass."""
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=REGION, **_lower(CREDENTIALS))
    out: dict[str, list[str]] = {}
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        tags = {t["Key"]: t["Value"] for t in template.get("Tags") or ()}
        versions = ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"]
        )["LaunchTemplateVersions"]
        data = base64.b64decode(versions[0]["LaunchTemplateData"]["UserData"]).decode()
        out.setdefault(tags.get("karpenter.k8s.aws/ec2nodeclass", "?"), []).append(data)
    return out


def check_al2023(text: str, dns: str, cidr: str) -> None:
    message = email.message_from_string(text)
    (config,) = [
        yaml.safe_load(str(p.get_payload()))
        for p in message.walk()
        if p.get_content_type() == "application/node.eks.aws"
    ]
    cluster = config["spec"]["cluster"]
    assert cluster["cidr"] == cidr and cluster["name"] == "demo"
    assert cluster["apiServerEndpoint"] and cluster["certificateAuthority"]
    kubelet = config["spec"]["kubelet"]
    assert kubelet["config"]["clusterDNS"] == [dns]
    assert kubelet["config"]["maxPods"] > 0
    taints = kubelet["config"]["registerWithTaints"]
    assert REGISTRATION in taints
    assert {"key": "dedicated", "value": "seed", "effect": "NoSchedule"} in taints
    (flag,) = kubelet["flags"]
    assert "karpenter.sh/nodepool=seed" in flag and "node-restriction.kubernetes.io" not in flag


def check_bottlerocket(text: str, dns: str) -> None:
    settings = tomllib.loads(text)["settings"]["kubernetes"]
    assert settings["cluster-name"] == "demo"
    assert settings["cluster-dns-ip"] == [dns]
    assert settings["kube-reserved"] == KUBE_RESERVED
    assert settings["max-pods"] > 0
    assert settings["node-taints"]["karpenter.sh/unregistered"] == [":NoExecute"]
    assert settings["node-taints"]["dedicated"] == ["rocket:NoSchedule"]
    labels = settings["node-labels"]
    assert labels["karpenter.sh/nodepool"] == "rocket"
    assert not [k for k in labels if k.startswith("node-restriction.kubernetes.io")]


def test_launch_templates_carry_what_real_nodes_need_to_join(
    karpy_factory: KarpyFactory,
    kubectl: Kubectl,
    kubeconfig: str,
    namespace: str,
    moto: str,  # noqa: F811
    kube_dns: str,
) -> None:
    seeded = subprocess.run(
        [
            sys.executable,
            str(REPO / "hack/aws/moto_seed.py"),
            "--endpoint-url",
            moto,
            "--service-cidr",
            SERVICE_CIDR,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    ami = seeded.stdout.strip()
    assert ipaddress.ip_address(kube_dns) in ipaddress.ip_network(SERVICE_CIDR)
    with Kubelets(kubeconfig) as kubelets:
        karpy_factory(
            {
                "PROVIDER": "aws",
                "CLUSTER_NAME": "demo",
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": moto,
                "AWS_CONFIG_FILE": "/dev/null",
                **CREDENTIALS,
            }
        )
        seed = yaml.safe_load(
            (REPO / "hack/aws/moto-ec2nodeclass.yaml").read_text().replace("AMI_ID", ami)
        )
        assert seed["spec"]["amiFamily"] == "AL2023"
        kubectl.apply(seed)
        kubectl.apply(
            nodeclass("rocket", "Bottlerocket", ami, kubelet={"kubeReserved": KUBE_RESERVED})
        )
        kubectl.apply(nodepool("seed", "default"))
        kubectl.apply(nodepool("rocket", "rocket"))
        wait_nodepool_ready(kubectl, "seed", timeout=120)
        wait_nodepool_ready(kubectl, "rocket", timeout=120)
        kubectl.apply(pod("on-seed", namespace, "seed"))
        kubectl.apply(pod("on-rocket", namespace, "rocket"))

        def launched() -> dict[str, dict[str, Any]] | None:
            found = {
                c["metadata"]["labels"]["karpenter.sh/nodepool"]: c
                for c in nodeclaims(kubectl)
                if (c.get("status") or {}).get("providerID", "").startswith("aws:///")
            }
            return found if set(found) == {"seed", "rocket"} else None

        claims = wait_for(launched, timeout=240, message="both NodePools' instances launched")
        templates = user_data_of_templates(moto)
        assert templates.get("default") and templates.get("rocket"), sorted(templates)
        for text in templates["default"]:
            check_al2023(text, kube_dns, SERVICE_CIDR)
        for text in templates["rocket"]:
            check_bottlerocket(text, kube_dns)

        # The label the kubelet may not set is on the Node once it has registered.
        for claim in claims.values():
            name = node_name(claim["status"]["providerID"])

            def fenced(node: str = name) -> bool:
                found = kubectl("get", "node", node, "-o", "json", check=False)
                if found.returncode != 0:
                    return False
                labels = yaml.safe_load(found.stdout)["metadata"]["labels"]
                return labels.get(FENCED) == "true" and "karpenter.sh/registered" in labels

            wait_for(fenced, timeout=120, message=f"Node {name} registered with {FENCED}")
    assert kubelets.errors == []
