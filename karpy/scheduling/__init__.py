"""The scheduling simulation engine: pure, deterministic, no I/O and no asyncio.

Build a `SchedulingInput` (pending pods as `PodView`s from `pod_view(raw_pod)`, one
`NodePoolTemplate` per NodePool with its instance types, existing nodes, DaemonSet pods) and
call `schedule(input)` from a worker thread; it returns a `SchedulingResult` with the
NodeClaims to create, the pods placed on existing nodes, per-pod errors, the plan's hourly cost
and a lower bound on the cost of any plan.
"""

from __future__ import annotations

from karpy.scheduling.catalog import (
    CatalogError,
    dump_catalog,
    kwok_catalog_json,
    kwok_instance_types,
    load_catalog,
    parse_catalog,
)
from karpy.scheduling.instancetypes import InstanceType, Offering, order_by_price
from karpy.scheduling.lp import warm_up
from karpy.scheduling.model import (
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    SchedulingInput,
    SchedulingResult,
)
from karpy.scheduling.pods import PodError, PodView, pod_view
from karpy.scheduling.quantity import Quantity, QuantityError, parse_quantity
from karpy.scheduling.requirements import Requirement, RequirementError, Requirements
from karpy.scheduling.resources import ResourceError, ResourceMap, format_resources, pod_requests
from karpy.scheduling.scheduler import schedule
from karpy.scheduling.taints import Taint, TaintError, Toleration

__all__ = [
    "CatalogError",
    "ExistingNode",
    "InstanceType",
    "NewNodeClaim",
    "NodePoolTemplate",
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
    "SchedulingInput",
    "SchedulingResult",
    "Taint",
    "TaintError",
    "Toleration",
    "dump_catalog",
    "format_resources",
    "kwok_catalog_json",
    "kwok_instance_types",
    "load_catalog",
    "order_by_price",
    "parse_catalog",
    "parse_quantity",
    "pod_requests",
    "pod_view",
    "schedule",
    "warm_up",
]
