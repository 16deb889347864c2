"""Builders of the objects karpy's tests create: raw JSON dicts, as the API serves them.

    from tests.kit import nodeclaim, nodepool, kwok_nodeclass, pod

Defaults make the smallest valid object on the `default` KWOKNodeClass; each keyword adds one
field. Suites keep only their own fixtures (specific claims, environments), built from these.
"""

from tests.kit.objects import (
    KWOK_NODECLASS_REF,
    LINUX,
    LINUX_AMD64_ON_DEMAND,
    capacitybuffer,
    claim_spec,
    conditions,
    daemonset,
    ec2nodeclass,
    kwok_nodeclass,
    node,
    nodeclaim,
    nodeoverlay,
    nodepool,
    pdb,
    pod,
    podtemplate,
    pv,
    pvc,
    ready_claim_conditions,
    schedulingconfig,
    served,
    status_of,
    storage_class,
)

__all__ = [
    "KWOK_NODECLASS_REF",
    "LINUX",
    "LINUX_AMD64_ON_DEMAND",
    "capacitybuffer",
    "claim_spec",
    "conditions",
    "daemonset",
    "ec2nodeclass",
    "kwok_nodeclass",
    "node",
    "nodeclaim",
    "nodeoverlay",
    "nodepool",
    "pdb",
    "pod",
    "podtemplate",
    "pv",
    "pvc",
    "ready_claim_conditions",
    "schedulingconfig",
    "served",
    "status_of",
    "storage_class",
]
