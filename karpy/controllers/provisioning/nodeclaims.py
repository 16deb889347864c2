"""The NodeClaim object for a planned node, as Karpenter's `NodeClaimTemplate.ToNodeClaim`.

`generateName: <nodepool>-`, an owner reference to the NodePool, the template's labels and
annotations plus the NodePool hash, requirements narrowed to the instance types that fit,
resource requests (pods plus DaemonSet overhead), taints, startup taints, the NodeClass
reference, expireAfter and terminationGracePeriod. When a NodeOverlay priced or added capacity
to any of its instance types, Karpenter's overlay annotations say so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from karpy.apis.v1 import group_of_ref, labels
from karpy.apis.v1.nodepool import API_VERSION as NODEPOOL_API_VERSION
from karpy.apis.v1.nodepool import KIND as NODEPOOL_KIND
from karpy.apis.v1alpha1 import (
    ANNOTATION_CAPACITY_OVERLAY_APPLIED,
    ANNOTATION_PRICE_OVERLAY_APPLIED,
)
from karpy.controllers.nodepool.hash import hash_annotations
from karpy.scheduling.engine.model import NewNodeClaim
from karpy.scheduling.resources import format_resources

__all__ = [
    "ANNOTATION_PLAN",
    "PLAN_OPTIONS",
    "nodeclaim_for",
    "plan_annotation",
    "requirements_for",
]

JSON = dict[str, Any]
_ALLOWED_KARPENTER_KEYS = labels.ALLOWED_KARPENTER_LABELS


def requirements_for(claim: NewNodeClaim) -> list[JSON]:
    """The planned node's requirements as NodeClaim requirements (keys a NodeClaim may hold)."""
    out: list[JSON] = []
    for req in claim.requirements.to_list():
        key = str(req["key"])
        if key == labels.LABEL_HOSTNAME:
            continue
        if key.split("/", 1)[0].endswith(labels.GROUP) and key not in _ALLOWED_KARPENTER_KEYS:
            continue
        out.append(req)
    return out


def nodeclaim_for(claim: NewNodeClaim, nodepool: Mapping[str, Any]) -> JSON:
    """The NodeClaim object for a planned node, as Karpenter writes it: the plan's labels plus
    the NodePool and NodeClass labels, the template's annotations plus the NodePool hash (so
    drift sees no change on a fresh claim) and the overlay and minValues markers, the template's
    expiry and grace period, and the NodePool as owner. The termination finalizer is set from
    the start so no instance can outlive a claim deleted in mid-launch."""
    meta = nodepool.get("metadata") or {}
    spec = nodepool.get("spec") or {}
    template = spec.get("template") or {}
    tmeta = template.get("metadata") or {}
    tspec = template.get("spec") or {}
    ref = dict(tspec.get("nodeClassRef") or {})
    group = group_of_ref(ref)
    node_labels = dict(claim.labels)
    node_labels[labels.LABEL_NODEPOOL] = claim.nodepool
    if group and ref.get("kind") and ref.get("name"):
        node_labels[f"{group}/{str(ref['kind']).lower()}"] = str(ref["name"])
    annotations = dict(tmeta.get("annotations") or {})
    annotations.update(hash_annotations(nodepool))
    # as Karpenter: "true" when a minValues was lowered to launch it (BestEffort), else "false"
    annotations[labels.ANNOTATION_NODECLAIM_MIN_VALUES_RELAXED] = str(
        claim.min_values_relaxed
    ).lower()
    if any(it.price_overlaid for it in claim.instance_types):
        annotations[ANNOTATION_PRICE_OVERLAY_APPLIED] = "true"
    if any(it.capacity_overlaid for it in claim.instance_types):
        annotations[ANNOTATION_CAPACITY_OVERLAY_APPLIED] = "true"
    body: JSON = {
        "requirements": requirements_for(claim),
        "resources": {"requests": format_resources(claim.requests)},
        "nodeClassRef": ref,
        "expireAfter": tspec.get("expireAfter") or "720h",
    }
    if claim.taints:
        body["taints"] = [t.to_dict() for t in claim.taints]
    if claim.startup_taints:
        body["startupTaints"] = [t.to_dict() for t in claim.startup_taints]
    if tspec.get("terminationGracePeriod"):
        body["terminationGracePeriod"] = tspec["terminationGracePeriod"]
    return {
        "apiVersion": f"{labels.GROUP}/v1",
        "kind": "NodeClaim",
        "metadata": {
            "generateName": f"{claim.nodepool}-",
            # The termination finalizer from the start: nothing can be launched for a NodeClaim
            # that could vanish without its instance being cleaned up.
            "finalizers": [labels.FINALIZER_TERMINATION],
            "labels": node_labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": NODEPOOL_API_VERSION,
                    "kind": NODEPOOL_KIND,
                    "name": meta.get("name", ""),
                    "uid": meta.get("uid", ""),
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": body,
    }


ANNOTATION_PLAN: Final = "karpy.sh/provisioning-plan"
"""karpy only, on the NodeClaims the provisioner launches: the plan that chose it (compact
JSON, read by `karpy explain pod`): its batch id, the batch's pods, NodeClaims, cost and lower
bound, whether the plan was proven optimal (and its gap), and the NodeClaim's cheapest instance
types with their prices (the first is the cheapest compatible one; at most `PLAN_OPTIONS`)."""
PLAN_OPTIONS: Final = 5


def plan_annotation(claim: NewNodeClaim, batch: Mapping[str, Any]) -> str:
    """The `karpy.sh/provisioning-plan` value of a planned NodeClaim: `batch` (the batch-wide
    fields) plus its first options in the plan's order (cheapest first), each `[instance type,
    zone, capacity type, price]` of the type's cheapest offering the NodeClaim allows."""
    options: list[list[Any]] = []
    for it in claim.instance_types[:PLAN_OPTIONS]:
        o = it.cheapest_offering(claim.requirements)
        if o is not None:
            options.append([it.name, o.zone, o.capacity_type, round(o.price, 6)])
    return json.dumps(
        {**batch, "types": len(claim.instance_types), "options": options}, separators=(",", ":")
    )
