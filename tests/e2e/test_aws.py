"""`karpy run` with PROVIDER=aws against a moto server on the local control plane.

The moto server runs in the test process and is seeded by `hack/aws/moto_seed.py`; the
EC2NodeClass and NodePool are the examples under `manifests/examples/aws/`. A pending pod
becomes a NodeClaim launched as an EC2 instance; the kwok simulator's kubelet half
(`tests.e2e.aws_kubelets`) registers a Node with the instance's providerID and keeps it Ready,
so the NodeClaim reaches Initialized, the scheduler binds the pod and the simulated kubelet runs
it; deleting the NodeClaim terminates the instance.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubetest import Kubectl
from moto.server import ThreadedMotoServer

from tests.e2e.aws_kubelets import Kubelets, node_name
from tests.e2e.conftest import KarpyFactory
from tests.e2e.support import condition, launched_claim, wait_for, wait_nodepool_ready, web_pod

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "manifests" / "examples" / "aws"
REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture
def moto() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def ec2_instances(endpoint: str) -> dict[str, dict[str, Any]]:
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=REGION, **_lower(CREDENTIALS))
    return {
        i["InstanceId"]: i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
    }


def _lower(env: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in env.items()}


def test_a_pending_pod_launches_an_ec2_instance_that_joins_and_is_terminated(
    karpy_factory: KarpyFactory, kubectl: Kubectl, kubeconfig: str, namespace: str, moto: str
) -> None:
    with Kubelets(kubeconfig) as kubelets:
        launch_join_and_terminate(karpy_factory, kubectl, namespace, moto)
    assert kubelets.errors == []


def launch_join_and_terminate(
    karpy_factory: KarpyFactory, kubectl: Kubectl, namespace: str, moto: str
) -> None:
    seeded = subprocess.run(
        [sys.executable, str(REPO / "hack/aws/moto_seed.py"), "--endpoint-url", moto],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    ami = seeded.stdout.strip()
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
    nodeclass = (REPO / "hack/aws/moto-ec2nodeclass.yaml").read_text().replace("AMI_ID", ami)
    kubectl.apply(nodeclass)
    kubectl.apply((EXAMPLES / "nodepool.yaml").read_text())
    wait_nodepool_ready(kubectl, "default")
    kubectl.apply(web_pod(namespace))

    claim = wait_for(
        lambda: launched_claim(kubectl, "aws:///"),
        timeout=120,
        message="a NodeClaim with an EC2 providerID",
    )
    instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]
    instance = ec2_instances(moto)[instance_id]
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert tags["karpenter.sh/nodeclaim"] == claim["metadata"]["name"]
    assert tags["karpenter.sh/nodepool"] == "default"
    assert tags["kubernetes.io/cluster/demo"] == "owned"
    assert tags["managed-by"] == "karpy"
    labels = claim["metadata"]["labels"]
    assert instance["InstanceType"] == labels["node.kubernetes.io/instance-type"]
    assert instance["InstanceType"].split(".")[0][0] in "cmr"  # the NodePool's categories
    # Stamped with the EC2NodeClass's hash at launch, as Karpenter does (drift compares them).
    ec2nodeclass = kubectl.json("get", "ec2nodeclass", "default")
    stamped = claim["metadata"].get("annotations") or {}
    for key in (
        "karpenter.k8s.aws/ec2nodeclass-hash",
        "karpenter.k8s.aws/ec2nodeclass-hash-version",
    ):
        assert stamped[key] == ec2nodeclass["metadata"]["annotations"][key]
    assert stamped["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v6"
    assert ec2nodeclass["metadata"]["finalizers"] == ["karpenter.k8s.aws/termination"]

    node = node_name(claim["status"]["providerID"])

    def initialized() -> bool:
        found = kubectl.json("get", "nodeclaim", claim["metadata"]["name"])
        state = condition(found, "Initialized")
        return state is not None and state.get("status") == "True"

    wait_for(initialized, timeout=60, message="NodeClaim Initialized")
    registered = kubectl.json("get", "node", node)
    assert registered["spec"]["providerID"] == claim["status"]["providerID"]

    def running_on_node() -> bool:
        pod = kubectl.json("get", "pod", "web", "-n", namespace)
        return pod["spec"].get("nodeName") == node and pod["status"].get("phase") == "Running"

    wait_for(running_on_node, timeout=60, message="pod bound to the new Node and Running")

    # The simulated kubelet finishes the pod's deletion, then the NodeClaim goes.
    kubectl("delete", "pod", "web", "-n", namespace, timeout=60)
    kubectl("delete", "nodeclaim", claim["metadata"]["name"], timeout=90)
    state = ec2_instances(moto)[instance_id]["State"]["Name"]
    assert state in ("shutting-down", "terminated")
