"""Reading and writing the raw NodeClaim and Node dicts several controller areas work on.

Controllers read objects from the shared informers as plain dicts (never mutated) and write
them back with small patches. Finalizers are removed by value (a strategic merge patch on
Nodes, a JSON patch with a `test` on NodeClaims), so another controller's finalizer is never
lost; deletes carry the UID, so an object that took the name since is left alone. The generic
readers (metadata, timestamps, conditions) are `karpy.apis.objects`; condition writes are
`karpy.controllers.common.status`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.duration import DurationError, parse_duration, parse_nillable_duration
from karpy.apis.objects import meta, parse_time
from karpy.apis.v1 import NodeClaim, labels
from karpy.kube import NODES, Client, ConflictError, Informer, NotFoundError, PatchType, Resource
from karpy.kube.store import INDEX_PROVIDER_ID, field_indexer

__all__ = [
    "INDEX_NODECLAIM_PROVIDER_ID",
    "NODECLAIMS",
    "delete_exactly",
    "ensure_provider_id_index",
    "expire_after",
    "grace_period",
    "index_nodeclaim_provider_id",
    "nodeclaim_model",
    "object_ref",
    "remove_claim_finalizer",
    "remove_node_finalizer",
    "termination_deadline",
]

JSON = dict[str, Any]


INDEX_NODECLAIM_PROVIDER_ID: Final = INDEX_PROVIDER_ID
"""Index of NodeClaims by the instance they launched (their Node's `spec.providerID`); the same
index name the cluster state registers on the shared NodeClaim informer."""
index_nodeclaim_provider_id: Final = field_indexer("status", "providerID")


def ensure_provider_id_index(nodeclaims: Informer) -> None:
    """Index NodeClaims by providerID unless the informer already is (the cluster state adds the
    same index; an informer takes one function per index name)."""
    if INDEX_NODECLAIM_PROVIDER_ID not in nodeclaims.store.indexers:
        nodeclaims.add_indexer(INDEX_NODECLAIM_PROVIDER_ID, index_nodeclaim_provider_id)


# -- small readers ----------------------------------------------------------------------------


def object_ref(obj: Mapping[str, Any], *, kind: str, api_version: str) -> JSON:
    """`obj` with the apiVersion and kind an event needs (cached list items carry neither)."""
    m = meta(obj)
    ref_meta: JSON = {"name": m.get("name", "")}
    for key in ("namespace", "uid", "resourceVersion"):
        if m.get(key):
            ref_meta[key] = m[key]
    return {"apiVersion": api_version, "kind": kind, "metadata": ref_meta}


def nodeclaim_model(raw: Mapping[str, Any]) -> NodeClaim:
    """The typed NodeClaim a cloud provider takes."""
    return NodeClaim.model_validate(dict(raw))


def termination_deadline(claim: Mapping[str, Any]) -> datetime | None:
    """When the claim's terminationGracePeriod runs out (its termination-timestamp annotation)."""
    annotations = meta(claim).get("annotations") or {}
    return parse_time(annotations.get(labels.ANNOTATION_NODECLAIM_TERMINATION_TIMESTAMP))


def grace_period(claim: Mapping[str, Any]) -> timedelta | None:
    """`spec.terminationGracePeriod`; None when unset (wait forever) or unreadable."""
    return _spec_duration(claim, field="terminationGracePeriod", parse=parse_duration)


def expire_after(claim: Mapping[str, Any]) -> timedelta | None:
    """`spec.expireAfter`; None for `Never` or when unreadable."""
    return _spec_duration(claim, field="expireAfter", parse=parse_nillable_duration)


def _spec_duration(
    claim: Mapping[str, Any], *, field: str, parse: Callable[[str], timedelta | None]
) -> timedelta | None:
    text = (claim.get("spec") or {}).get(field)
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse(text)
    except DurationError:
        return None


# -- deletion ---------------------------------------------------------------------------------


async def delete_exactly(client: Client, *, resource: Resource, obj: Mapping[str, Any]) -> bool:
    """Delete `obj` itself: its UID is a precondition, so an object that has since taken the
    name is left alone. False if it was already gone or replaced."""
    m = meta(obj)
    try:
        await client.delete(resource, str(m.get("name")), uid=m.get("uid"))
    except (NotFoundError, ConflictError):
        return False
    return True


# -- finalizers -------------------------------------------------------------------------------


async def remove_node_finalizer(client: Client, node: Mapping[str, Any]) -> JSON:
    """Remove `karpenter.sh/termination` from a Node, leaving other finalizers alone."""
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [labels.FINALIZER_TERMINATION]}}
    return await client.patch(
        NODES, str(meta(node).get("name")), patch, patch_type=PatchType.STRATEGIC
    )


async def remove_claim_finalizer(client: Client, claim: Mapping[str, Any]) -> JSON | None:
    """Remove `karpenter.sh/termination` from a NodeClaim by index, guarded by a `test` of that
    index (custom resources take no strategic patches). None if it was not there."""
    finalizers = list(meta(claim).get("finalizers") or ())
    if labels.FINALIZER_TERMINATION not in finalizers:
        return None
    index = finalizers.index(labels.FINALIZER_TERMINATION)
    path = f"/metadata/finalizers/{index}"
    patch = [
        {"op": "test", "path": path, "value": labels.FINALIZER_TERMINATION},
        {"op": "remove", "path": path},
    ]
    return await client.patch(
        NODECLAIMS, str(meta(claim).get("name")), patch, patch_type=PatchType.JSON
    )
