"""Where new nodes find the apiserver, as Karpenter decides it.

- Endpoint: `CLUSTER_ENDPOINT`, else `eks:DescribeCluster(CLUSTER_NAME).cluster.endpoint`; karpy
  does not start when neither gives one (a node bootstrapped against the wrong address never
  joins, and the error names the setting to fix).
- CA bundle: `CLUSTER_CA_BUNDLE`, else the CA karpy itself trusts for the apiserver (its
  kubeconfig's or the service account's `ca.crt`), base64 — Karpenter's choice, and an input of
  the EC2NodeClass hash, so both stamp equal hashes. Only when karpy trusts no CA file is the
  cluster's `certificateAuthority.data` from DescribeCluster used.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import BotoCoreError, ClientError, error_code, error_message
from karpy.cloudprovider.registry import ProviderUnavailableError

__all__ = ["ClusterAccess", "discover_cluster"]


@dataclass(frozen=True)
class ClusterAccess:
    endpoint: str
    ca_bundle: str | None


def _ca_of_file(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return base64.b64encode(Path(path).read_bytes()).decode()
    except OSError:
        return None


async def discover_cluster(
    clients: AWSClients,
    *,
    cluster_name: str,
    endpoint: str = "",
    ca_bundle: str = "",
    ca_file: str | None = None,
) -> ClusterAccess:
    """The endpoint and CA bundle nodes are given; DescribeCluster only when needed."""
    ca = ca_bundle or _ca_of_file(ca_file)
    if endpoint and ca:
        return ClusterAccess(endpoint, ca)
    try:
        async with clients.client("eks") as eks:
            cluster = (await eks.describe_cluster(name=cluster_name))["cluster"]
    except (ClientError, BotoCoreError) as error:
        if endpoint:
            return ClusterAccess(endpoint, ca)
        reason = f"{error_code(error)}: " if error_code(error) else ""
        raise ProviderUnavailableError(
            f"CLUSTER_ENDPOINT is not set and eks:DescribeCluster({cluster_name!r}) failed "
            f"({reason}{error_message(error)}); set CLUSTER_ENDPOINT"
        ) from error
    found = str(cluster.get("endpoint") or "")
    if not endpoint and not found:
        raise ProviderUnavailableError(
            f"CLUSTER_ENDPOINT is not set and EKS cluster {cluster_name!r} has no endpoint yet; "
            "set CLUSTER_ENDPOINT"
        )
    data = (cluster.get("certificateAuthority") or {}).get("data")
    return ClusterAccess(endpoint or found, ca or (str(data) if data else None))
