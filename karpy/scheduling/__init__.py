"""The scheduling vocabulary: the plain types the engine, the providers and the controllers share.

Kubernetes quantities and resource lists, node-selector requirements, taints and tolerations,
label selectors, `PodView` (what scheduling reads of a pod, from `pod_view(raw_pod)`), instance
types with their offerings, and the instance-type catalogue file format. Pure: no I/O and no
asyncio. The engine that plans with them is `karpy.scheduling.engine`; importing this package
does not load it.
"""

from __future__ import annotations

from karpy.scheduling.catalog import CatalogError, dump_catalog, load_catalog, parse_catalog
from karpy.scheduling.instancetypes import InstanceType, Offering, order_by_price
from karpy.scheduling.pods import PodError, PodView, pod_view
from karpy.scheduling.quantity import Quantity, QuantityError, parse_quantity
from karpy.scheduling.requirements import Requirement, RequirementError, Requirements
from karpy.scheduling.resources import ResourceError, ResourceMap, format_resources, pod_requests
from karpy.scheduling.taints import Taint, TaintError, Toleration

__all__ = [
    "CatalogError",
    "InstanceType",
    "Offering",
    "PodError",
    "PodView",
    "Quantity",
    "QuantityError",
    "Requirement",
    "RequirementError",
    "Requirements",
    "ResourceError",
    "ResourceMap",
    "Taint",
    "TaintError",
    "Toleration",
    "dump_catalog",
    "format_resources",
    "load_catalog",
    "order_by_price",
    "parse_catalog",
    "parse_quantity",
    "pod_requests",
    "pod_view",
]
