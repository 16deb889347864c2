"""Where the karpenter.sh kinds and the NodeClass kinds live in the API, for the client and the
informer cache (`karpy.kube` knows only built-in kinds; `karpy.apis` knows no client)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from karpy.apis.aws.v1 import EC2NODECLASS
from karpy.apis.kwok.v1alpha1 import KWOKNODECLASS
from karpy.apis.resource import CustomResource
from karpy.apis.v1 import NODECLAIM, NODEPOOL
from karpy.kube import Resource

__all__ = [
    "EC2NODECLASSES",
    "KWOKNODECLASSES",
    "NODECLAIMS",
    "NODECLASSES",
    "NODEPOOLS",
    "nodeclass_resource",
    "resource_of",
]


def resource_of(custom: CustomResource[Any]) -> Resource:
    """The API resource serving a custom resource kind."""
    return Resource(
        custom.group,
        custom.version,
        custom.kind,
        custom.plural,
        namespaced=custom.scope == "Namespaced",
    )


NODEPOOLS: Final = resource_of(NODEPOOL)
NODECLAIMS: Final = resource_of(NODECLAIM)
KWOKNODECLASSES: Final = resource_of(KWOKNODECLASS)
EC2NODECLASSES: Final = resource_of(EC2NODECLASS)
NODECLASSES: Final = (KWOKNODECLASSES, EC2NODECLASSES)
"""Every NodeClass kind karpy knows; a provider supports one of them."""


def nodeclass_resource(
    group: str, kind: str, supported: Iterable[Resource] = NODECLASSES
) -> Resource | None:
    """The supported NodeClass resource for a nodeClassRef's group and kind, if any."""
    for resource in supported:
        if resource.group == group and resource.kind == kind:
            return resource
    return None
