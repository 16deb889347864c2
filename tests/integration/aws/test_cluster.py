"""Where nodes find the apiserver (`discover_cluster`) against the moto server: the settings win,
else the EKS cluster's endpoint; the CA bundle is the one karpy trusts before EKS's; with no
endpoint anywhere karpy refuses to start, naming CLUSTER_ENDPOINT."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.cluster import discover_cluster
from karpy.cloudprovider.registry import ProviderUnavailableError
from tests.integration.aws.conftest import REGION, CallCounter


@pytest.fixture
async def eks_cluster(aws_clients: AWSClients) -> dict[str, str]:
    async with aws_clients.client("eks") as eks:
        cluster = (
            await eks.create_cluster(
                name="prod",
                version="1.33",
                roleArn="arn:aws:iam::123456789012:role/prod-cluster",
                resourcesVpcConfig={"subnetIds": []},
            )
        )["cluster"]
    return {"endpoint": cluster["endpoint"], "ca": cluster["certificateAuthority"]["data"]}


async def test_endpoint_and_ca_come_from_eks_when_not_set(
    aws_clients: AWSClients, eks_cluster: dict[str, str]
) -> None:
    access = await discover_cluster(aws_clients, cluster_name="prod")
    assert access.endpoint == eks_cluster["endpoint"]
    assert access.ca_bundle == eks_cluster["ca"]


async def test_the_ca_karpy_trusts_comes_before_eks_and_settings_before_both(
    moto_endpoint: str, eks_cluster: dict[str, str], tmp_path: Path
) -> None:
    counter = CallCounter()
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, on_client=counter.hook)
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(b"-----BEGIN CERTIFICATE-----\nkarpy\n-----END CERTIFICATE-----\n")
    access = await discover_cluster(clients, cluster_name="prod", ca_file=str(ca_file))
    assert access.endpoint == eks_cluster["endpoint"]
    assert access.ca_bundle == base64.b64encode(ca_file.read_bytes()).decode()

    access = await discover_cluster(
        clients, cluster_name="prod", endpoint="https://api.example", ca_bundle="Q0E="
    )
    assert (access.endpoint, access.ca_bundle) == ("https://api.example", "Q0E=")
    assert counter.calls["eks.DescribeCluster"] == 1  # nothing asked when both are set


async def test_no_endpoint_anywhere_names_the_setting(aws_clients: AWSClients) -> None:
    with pytest.raises(ProviderUnavailableError, match=r"CLUSTER_ENDPOINT is not set.*'prod'"):
        await discover_cluster(aws_clients, cluster_name="prod")
    # With the endpoint set, a missing EKS cluster only means no CA from it.
    access = await discover_cluster(aws_clients, cluster_name="prod", endpoint="https://x")
    assert (access.endpoint, access.ca_bundle) == ("https://x", None)
