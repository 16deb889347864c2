"""The NodeClass kinds a NodePool may reference, found by a nodeClassRef's group and kind (the
descriptors live in `karpy.apis.descriptors`; the kinds the running provider serves are its
plugin's word, `karpy.cloudprovider.registry`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from karpy.apis.descriptors import EC2NODECLASSES, KWOKNODECLASSES
from karpy.kube import Resource

__all__ = ["NODECLASSES", "nodeclass_resource"]

NODECLASSES: Final = (KWOKNODECLASSES, EC2NODECLASSES)
"""Every NodeClass kind karpy knows."""


def nodeclass_resource(
    group: str, kind: str, *, supported: Iterable[Resource] = NODECLASSES
) -> Resource | None:
    """The supported NodeClass resource for a nodeClassRef's group and kind, if any."""
    for resource in supported:
        if resource.group == group and resource.kind == kind:
            return resource
    return None
