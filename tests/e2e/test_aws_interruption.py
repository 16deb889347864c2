"""`karpy run` with PROVIDER=aws and INTERRUPTION_QUEUE against moto on the local control plane:
a spot interruption warning for the instance running a Deployment's pods drains it within the
PodDisruptionBudget, the pods run on a replacement that avoided the interrupted offering, and
the interrupted NodeClaim and instance are gone.

moto runs no kubelets, so `tests.e2e.aws_kubelets.Kubelets` plays them.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from kubetest import Kubectl
from moto.server import ThreadedMotoServer

from tests.e2e.aws_kubelets import Kubelets
from tests.e2e.conftest import KarpyFactory
from tests.e2e.support import deployment, nodeclaims, wait_for, wait_nodepool_ready
from tests.e2e.test_aws import CREDENTIALS, REGION, REPO, _lower, ec2_instances
from tests.kit import pdb
from tests.kit.interruption import body, spot_interruption

JSON = dict[str, Any]
QUEUE = "demo"


def reset(endpoint: str) -> None:
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@pytest.fixture
def moto() -> Iterator[str]:
    """A moto server from a clean state, left clean: servers in one process share moto's
    backends, so the IAM role and VPC seeded here would break the next test's seed."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    reset(endpoint)
    try:
        yield endpoint
    finally:
        reset(endpoint)
        server.stop()


REPLICAS = 3


def instance_of(claim: JSON) -> str:
    return str(claim["status"]["providerID"]).rsplit("/", 1)[-1]


def offering(claim: JSON) -> tuple[str, str]:
    labels = claim["metadata"]["labels"]
    return labels["node.kubernetes.io/instance-type"], labels["topology.kubernetes.io/zone"]


def ready_pods(kubectl: Kubectl, namespace: str) -> list[JSON]:
    items: list[JSON] = kubectl.json("get", "pods", "-n", namespace, "-l", "app=web")["items"]
    return [
        p
        for p in items
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (p.get("status") or {}).get("conditions") or ()
        )
    ]


NODEPOOL: JSON = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "spot"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                    {
                        "key": "karpenter.k8s.aws/instance-category",
                        "operator": "In",
                        "values": ["c", "m", "r"],
                    },
                    {
                        "key": "karpenter.k8s.aws/instance-generation",
                        "operator": "Gt",
                        "values": ["4"],
                    },
                ],
            }
        },
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
    },
}


def test_a_spot_interruption_moves_the_pods_to_a_replacement_within_the_pdb(
    karpy_factory: KarpyFactory, kubectl: Kubectl, kubeconfig: str, namespace: str, moto: str
) -> None:
    seeded = subprocess.run(
        [sys.executable, str(REPO / "hack/aws/moto_seed.py"), "--endpoint-url", moto],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    sqs = boto3.client("sqs", endpoint_url=moto, region_name=REGION, **_lower(CREDENTIALS))
    url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    karpy = karpy_factory(
        {
            "PROVIDER": "aws",
            "CLUSTER_NAME": "demo",
            "INTERRUPTION_QUEUE": QUEUE,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": moto,
            "AWS_CONFIG_FILE": "/dev/null",
            **CREDENTIALS,
        }
    )
    nodeclass = (REPO / "hack/aws/moto-ec2nodeclass.yaml").read_text()
    kubectl.apply(nodeclass.replace("AMI_ID", seeded.stdout.strip()))
    kubectl.apply(NODEPOOL)
    wait_nodepool_ready(kubectl, "spot")
    budget = pdb("web", namespace, selector={"matchLabels": {"app": "web"}})
    budget["spec"]["maxUnavailable"] = 1
    kubectl.apply(budget)
    kubectl.apply(deployment("web", namespace, replicas=REPLICAS, cpu="500m", memory="512Mi"))

    with Kubelets(kubeconfig) as kubelets:
        wait_for(
            lambda: len(ready_pods(kubectl, namespace)) == REPLICAS,
            timeout=180,
            message="the Deployment's pods Running on EC2 nodes",
        )
        pods = ready_pods(kubectl, namespace)
        node = pods[0]["spec"]["nodeName"]
        claim = next(c for c in nodeclaims(kubectl) if f"ip-{instance_of(c)}.ec2.internal" == node)
        assert claim["metadata"]["labels"]["karpenter.sh/capacity-type"] == "spot"
        interrupted = instance_of(claim)
        on_node = sum(1 for p in pods if p["spec"]["nodeName"] == node)

        started = time.monotonic()
        sqs.send_message(QueueUrl=url, MessageBody=body(spot_interruption(interrupted)))
        lowest = REPLICAS

        def moved() -> bool:
            nonlocal lowest
            ready = ready_pods(kubectl, namespace)
            lowest = min(lowest, len(ready))
            names = {c["metadata"]["name"] for c in nodeclaims(kubectl)}
            return (
                len(ready) == REPLICAS
                and all(p["spec"]["nodeName"] != node for p in ready)
                and claim["metadata"]["name"] not in names
            )

        wait_for(moved, timeout=240, message="the pods Running elsewhere and the NodeClaim gone")
        seconds = time.monotonic() - started
        assert not kubelets.errors, kubelets.errors

    # maxUnavailable 1: never more than one pod short while the node drained.
    assert lowest >= REPLICAS - 1, f"{lowest} Ready pods at one point"
    assert ec2_instances(moto)[interrupted]["State"]["Name"] in ("shutting-down", "terminated")
    replacements = [c for c in nodeclaims(kubectl) if not c["metadata"].get("deletionTimestamp")]
    assert replacements
    for replacement in replacements:
        assert offering(replacement) != offering(claim), "the replacement reused the offering"
    attrs = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    assert attrs == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
    }
    assert karpy.log_lines("initiating delete from interruption message")
    # Nothing but the interruption replaced a node (moto's spot instances once looked drifted).
    assert not karpy.log_lines("marking drifted")
    print(f"{on_node} pods interrupted: all {REPLICAS} Ready elsewhere after {seconds:.1f} s")
