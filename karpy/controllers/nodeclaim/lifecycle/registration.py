"""Registration: adopt the Node that came up for a NodeClaim.

The Node is found by providerID. Karpy then makes it the NodeClaim's: the termination finalizer,
an owner reference to the NodeClaim, the NodeClaim's labels and annotations, its taints and
startup taints (unless the Node says `karpenter.sh/do-not-sync-taints: "true"`); it removes the
`karpenter.sh/unregistered` taint and labels the Node `karpenter.sh/registered: "true"`, all in
one patch guarded by the Node's resourceVersion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpy.apis.objects import taint_matches
from karpy.apis.v1 import labels
from karpy.apis.v1.nodeclaim import API_VERSION, KIND

__all__ = ["registration_patch"]

JSON = dict[str, Any]


def registration_patch(node: Mapping[str, Any], claim: Mapping[str, Any]) -> JSON:
    """The merge patch that registers `node` for `claim`."""
    nmeta = node.get("metadata") or {}
    cmeta = claim.get("metadata") or {}
    cspec = claim.get("spec") or {}
    node_labels = {**(cmeta.get("labels") or {}), labels.LABEL_NODE_REGISTERED: "true"}
    finalizers = list(nmeta.get("finalizers") or ())
    if labels.FINALIZER_TERMINATION not in finalizers:
        finalizers.append(labels.FINALIZER_TERMINATION)
    owners = [dict(o) for o in nmeta.get("ownerReferences") or ()]
    if not any(o.get("uid") == cmeta.get("uid") for o in owners):
        owners.append(
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": cmeta.get("name"),
                "uid": cmeta.get("uid"),
                "blockOwnerDeletion": True,
            }
        )
    taints = [
        dict(t)
        for t in (node.get("spec") or {}).get("taints") or ()
        if t.get("key") != labels.TAINT_UNREGISTERED_KEY
    ]
    if (nmeta.get("labels") or {}).get(labels.LABEL_DO_NOT_SYNC_TAINTS) != "true":
        for taint in [*(cspec.get("taints") or ()), *(cspec.get("startupTaints") or ())]:
            if not any(taint_matches(taint, t) for t in taints):
                taints.append(dict(taint))
    return {
        "metadata": {
            "labels": node_labels,
            "annotations": dict(cmeta.get("annotations") or {}),
            "finalizers": finalizers,
            "ownerReferences": owners,
            "resourceVersion": nmeta.get("resourceVersion"),
        },
        "spec": {"taints": taints},
    }
