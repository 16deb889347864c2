"""The NodeClass kinds a NodePool may reference, and which of them the running provider serves.

The descriptors themselves live in `karpy.apis.descriptors`; this adds the lookup from a
nodeClassRef's group and kind, and the choice of NodeClass kind per provider.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from karpy.apis.descriptors import EC2NODECLASSES, KWOKNODECLASSES
from karpy.kube import Resource

__all__ = ["NODECLASSES", "PROVIDER_NODECLASSES", "nodeclass_resource"]

NODECLASSES: Final = (KWOKNODECLASSES, EC2NODECLASSES)
"""Every NodeClass kind karpy knows."""
PROVIDER_NODECLASSES: Final[dict[str, tuple[Resource, ...]]] = {
    "kwok": (KWOKNODECLASSES,),
    "aws": (EC2NODECLASSES,),
}
"""The NodeClass kinds each provider serves (Karpenter's `GetSupportedNodeClasses`)."""


def nodeclass_resource(
    group: str, kind: str, *, supported: Iterable[Resource] = NODECLASSES
) -> Resource | None:
    """The supported NodeClass resource for a nodeClassRef's group and kind, if any."""
    for resource in supported:
        if resource.group == group and resource.kind == kind:
            return resource
    return None
