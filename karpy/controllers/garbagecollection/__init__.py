"""Garbage collection: NodeClaims whose instance is gone, instances no NodeClaim owns."""

from __future__ import annotations

from karpy.controllers.garbagecollection.instance import InstanceGarbageCollection
from karpy.controllers.garbagecollection.nodeclaim import NodeClaimGarbageCollection

__all__ = ["InstanceGarbageCollection", "NodeClaimGarbageCollection"]
