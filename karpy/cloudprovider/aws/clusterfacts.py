"""Facts about the cluster that nodes need and that can change while karpy runs.

- Service CIDR and IP family: `eks:DescribeCluster(CLUSTER_NAME)`'s
  `kubernetesNetworkConfig.serviceIpv6Cidr` when its `ipFamily` is `ipv6`, else
  `serviceIpv4Cidr`, else `serviceIpv6Cidr`. AL2023's
  nodeadm refuses a NodeConfig without it, so an AL2023 EC2NodeClass is not Ready until it is
  known. A found CIDR is kept and re-read every `CIDR_TTL`; a failure is not remembered, so the
  next reconcile asks again, and a failed refresh keeps the CIDR already known.
- Cluster DNS IP: the ClusterIP of the `kube-system/kube-dns` Service, the default Karpenter gives
  nodes whose EC2NodeClass sets no `kubelet.clusterDNS` (`karpy.cloudprovider.kubedns`, shared
  with the Azure provider). Re-read every `DNS_TTL`.
- Kubernetes version: the apiserver's `/version`, re-read every `VERSION_TTL` (Karpenter's
  refresh), so alias AMIs follow a control-plane upgrade without a restart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import BotoCoreError, ClientError, error_code, error_message
from karpy.cloudprovider.kubedns import DNS_TTL, KubeDNS
from karpy.kube.client import Client
from karpy.kube.errors import KubeError

__all__ = [
    "CIDR_TTL",
    "DNS_TTL",
    "VERSION_TTL",
    "ClusterCIDRError",
    "ClusterFacts",
    "ServiceNetwork",
    "kubernetes_version",
    "service_cidr",
]

CIDR_TTL: Final = 3600.0
VERSION_TTL: Final = 300.0

log = structlog.get_logger("karpy.cloudprovider.aws")


class ClusterCIDRError(Exception):
    """The service CIDR could not be found; the message names the cause."""


@dataclass(frozen=True)
class ServiceNetwork:
    """The cluster's service CIDR and the IP family it implies."""

    cidr: str

    @property
    def ip_family(self) -> str:
        return "ipv6" if ":" in self.cidr else "ipv4"


def service_cidr(config: Mapping[str, Any]) -> str | None:
    """The service CIDR of a DescribeCluster `kubernetesNetworkConfig`: the one of the
    cluster's `ipFamily` when it says which, else `serviceIpv4Cidr`, else `serviceIpv6Cidr`
    (Karpenter's order). An IPv6 cluster's nodes need its IPv6 range: nodeadm takes the
    node's IP family from this CIDR."""
    v4, v6 = config.get("serviceIpv4Cidr"), config.get("serviceIpv6Cidr")
    if str(config.get("ipFamily") or "").lower() == "ipv6" and v6:
        return str(v6)
    found = v4 or v6
    return str(found) if found else None


def kubernetes_version(version: Mapping[str, object]) -> str:
    """`1.33` from the apiserver's `/version` (minor versions may carry a `+`)."""
    major = str(version.get("major", "")).rstrip("+")
    minor = str(version.get("minor", "")).rstrip("+")
    return f"{major}.{minor}"


@dataclass
class _Cached:
    value: Any = None
    at: float | None = None


class ClusterFacts:
    """Reads and caches the service CIDR, the cluster DNS IP and the Kubernetes version."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        cluster_name: str,
        kube: Client | None = None,
        kubernetes_version: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clients = clients
        self.cluster_name = cluster_name
        self._kube = kube
        self._clock = clock
        self._network = _Cached()
        self._dns = KubeDNS(kube, clock=clock)
        self._version = _Cached(kubernetes_version, clock() if kubernetes_version else None)
        self._lock = asyncio.Lock()

    def _fresh(self, cached: _Cached, ttl: float) -> bool:
        return cached.at is not None and self._clock() - cached.at < ttl

    @property
    def known_network(self) -> ServiceNetwork | None:
        """The service network last found, without asking."""
        found: ServiceNetwork | None = self._network.value
        return found

    async def service_network(self) -> ServiceNetwork:
        """The service CIDR, from the cache or DescribeCluster; raises `ClusterCIDRError`
        naming the cause when neither has one."""
        if self._fresh(self._network, CIDR_TTL):
            return self._network.value  # type: ignore[no-any-return]
        async with self._lock:
            if self._fresh(self._network, CIDR_TTL):
                return self._network.value  # type: ignore[no-any-return]
            try:
                found = await self._describe_network()
            except ClusterCIDRError:
                if self._network.value is not None:
                    return self._network.value  # type: ignore[no-any-return]
                raise
            if found != self._network.value:
                log.info("discovered cluster CIDR", **{"cluster-cidr": found.cidr})
            self._network = _Cached(found, self._clock())
            return found

    async def _describe_network(self) -> ServiceNetwork:
        name = self.cluster_name
        try:
            async with self.clients.client("eks") as eks:
                cluster = (await eks.describe_cluster(name=name))["cluster"]
        except (ClientError, BotoCoreError) as error:
            code = error_code(error)
            cause = f"{code}: {error_message(error)}" if code else error_message(error)
            raise ClusterCIDRError(
                f"Failed to detect the cluster CIDR: eks:DescribeCluster({name!r}) failed ({cause})"
            ) from error
        cidr = service_cidr(cluster.get("kubernetesNetworkConfig") or {})
        if not cidr:
            raise ClusterCIDRError(
                f"Failed to detect the cluster CIDR: eks:DescribeCluster({name!r}) returned no "
                "kubernetesNetworkConfig.serviceIpv4Cidr or serviceIpv6Cidr"
            )
        return ServiceNetwork(cidr)

    async def dns_ip(self) -> str | None:
        """The kube-dns Service's ClusterIP, or None when there is no such Service (the node
        then keeps its image's default); a failed refresh keeps the IP already known."""
        return await self._dns.ip()

    async def kubernetes_version(self) -> str:
        """The control plane's `major.minor`, re-read every `VERSION_TTL`; a failed refresh
        keeps the version already known."""
        if self._kube is None or self._fresh(self._version, VERSION_TTL):
            return str(self._version.value or "")
        try:
            version = kubernetes_version(await self._kube.server_version())
        except KubeError:
            if self._version.value:
                return str(self._version.value)
            raise
        if self._version.value and version != self._version.value:
            log.info("kubernetes version changed", old=self._version.value, new=version)
        self._version = _Cached(version, self._clock())
        return version
