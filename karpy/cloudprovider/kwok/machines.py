"""The instances whose kubelets the simulator plays, as it sees them.

The simulator (`simulator.py`) registers a Node for each launched NodeClaim, keeps it Ready with
Lease renewals and status reports, and runs its pods. None of that depends on the provider
except which Nodes are its instances', what a launched instance's Node is called and carries,
and how the Node is created: `Machines` is that much. `KwokMachines` serves kwok's fake
instances (`kwok://<name>`, the KWOKNodeClass's registration delay); a test with another
provider's instances and no kubelets (the AWS end-to-end test against moto) gives its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from karpy.cloudprovider.kwok.drift import ANNOTATION_NODECLASS_HASH, nodeclass_hash
from karpy.cloudprovider.kwok.instances import (
    ANNOTATION_KWOK_NODE,
    KWOK_NODE_FAKE,
    PROVIDER_ID_PREFIX,
    node_name_of,
)
from karpy.cloudprovider.kwok.provider import KwokCloudProvider

__all__ = ["KwokMachines", "Machines", "Registration"]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Registration:
    """When a launched instance's kubelet registers (seconds after `Launched`) and the
    annotations its Node carries."""

    delay: float = 0.0
    annotations: Mapping[str, str] = field(default_factory=dict)


class Machines(Protocol):
    """What the simulator needs to know about the instances it plays the kubelets of."""

    def serves(self, provider_id: str) -> bool:
        """Whether a Node (or NodeClaim) with this providerID is one of them."""
        ...

    def node_name(self, provider_id: str) -> str | None:
        """The name the instance's kubelet registers its Node under (None: not one of them)."""
        ...

    async def registration(self, claim: Mapping[str, Any]) -> Registration:
        """How the launched `claim`'s instance registers."""
        ...

    async def create_node(self, node: JSON) -> None:
        """Create the instance's Node (an existing one is left as it is)."""
        ...


class KwokMachines:
    """kwok's fake instances: `kwok://<node name>`, registered after the KWOKNodeClass's
    delay with its hash annotation, created through the kwok provider."""

    def __init__(self, provider: KwokCloudProvider) -> None:
        self.provider = provider

    def serves(self, provider_id: str) -> bool:
        return provider_id.startswith(PROVIDER_ID_PREFIX)

    def node_name(self, provider_id: str) -> str | None:
        return node_name_of(provider_id)

    async def registration(self, claim: Mapping[str, Any]) -> Registration:
        ref = (claim.get("spec") or {}).get("nodeClassRef") or {}
        nodeclass = await self.provider.nodeclass(str(ref.get("name") or ""))
        return Registration(
            delay=self.provider.registration_delay(nodeclass).total_seconds(),
            annotations={
                ANNOTATION_NODECLASS_HASH: nodeclass_hash(nodeclass),
                ANNOTATION_KWOK_NODE: KWOK_NODE_FAKE,
            },
        )

    async def create_node(self, node: JSON) -> None:
        await self.provider.create_node(node)
