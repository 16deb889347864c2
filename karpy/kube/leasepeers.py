"""Leader Leases of the same name in other namespaces: another controller's election.

Leader election only keeps two replicas that share one Lease from acting at once. Two
installations of a controller in different namespaces each hold their own Lease, so both
lead and both act on the same cluster-scoped objects. `leases_elsewhere` finds such Leases, so
the caller can warn at start-up; it is a read, and a missing right to list Leases cluster-wide
only means nothing can be said.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from karpy.kube.client import Client
from karpy.kube.resources import LEASES

__all__ = ["PeerLease", "leases_elsewhere"]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PeerLease:
    """A Lease of the same name in another namespace, and who last held it."""

    namespace: str
    holder: str
    renew_time: str


async def leases_elsewhere(client: Client, *, name: str, namespace: str) -> list[PeerLease]:
    """The Leases called `name` outside `namespace`, sorted by namespace. Raises the client's
    errors (ForbiddenError when the caller may not list Leases in every namespace)."""
    found = await client.list(LEASES, field_selector={"metadata.name": name})
    peers: list[PeerLease] = []
    for lease in found.items:
        meta: JSON = lease.get("metadata") or {}
        if meta.get("namespace") == namespace:
            continue
        spec: JSON = lease.get("spec") or {}
        peers.append(
            PeerLease(
                namespace=str(meta.get("namespace") or ""),
                holder=str(spec.get("holderIdentity") or ""),
                renew_time=str(spec.get("renewTime") or ""),
            )
        )
    return sorted(peers, key=lambda p: p.namespace)
