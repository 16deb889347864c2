"""The cluster DNS IP new nodes' kubelets are given: the `kube-system/kube-dns` Service's
ClusterIP.

Shared by the providers: AWS gives it to nodes whose EC2NodeClass sets no
`kubelet.clusterDNS` (Karpenter's default), Azure to nodes when `DNS_SERVICE_IP` is unset
(instead of AKS's 10.0.0.10, which is right only for the default service CIDR). CoreDNS keeps
the name `kube-dns` for compatibility, so the one Service is read (the charts grant `get` on it
alone). It is read on first use and again every `DNS_TTL`, so a cluster whose DNS Service is
recreated is followed without a restart. A failed read (the Service missing included) keeps
the IP already known; a Service never found, or one without a ClusterIP, is None, and the
caller keeps its own default.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

import structlog

from karpy.kube.client import Client
from karpy.kube.errors import KubeError
from karpy.kube.resources import SERVICES

__all__ = ["DNS_TTL", "KUBE_DNS_NAMESPACE", "KUBE_DNS_SERVICE", "KubeDNS"]

DNS_TTL: Final = 300.0
KUBE_DNS_NAMESPACE: Final = "kube-system"
KUBE_DNS_SERVICE: Final = "kube-dns"

log = structlog.get_logger("karpy.cloudprovider")


class KubeDNS:
    """The kube-dns Service's ClusterIP, cached for `ttl` seconds; None without a client."""

    def __init__(
        self,
        kube: Client | None,
        *,
        ttl: float = DNS_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self._ttl = ttl
        self._clock = clock
        self._ip: str | None = None
        self._at: float | None = None

    @property
    def known(self) -> str | None:
        """The IP last found, without asking."""
        return self._ip

    async def ip(self) -> str | None:
        """The ClusterIP, from the cache or the apiserver."""
        if self._kube is None or (self._at is not None and self._clock() - self._at < self._ttl):
            return self._ip
        try:
            service = await self._kube.get(SERVICES, KUBE_DNS_SERVICE, namespace=KUBE_DNS_NAMESPACE)
        except KubeError as error:
            log.info("no kube-dns service for the cluster DNS default", error=str(error))
            self._at = self._clock()
            return self._ip
        found = str((service.get("spec") or {}).get("clusterIP") or "")
        value = found if found and found != "None" else None
        if value != self._ip:
            log.info("discovered kube dns", **{"kube-dns-ip": value})
        self._ip, self._at = value, self._clock()
        return value
