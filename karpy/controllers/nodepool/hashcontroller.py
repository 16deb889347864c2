"""`nodepool.hash`: stamp the NodePool hash and hash version annotations on NodePools.

The hash and its version are Karpenter's (`v3`), so objects stamped by Karpenter are left as they
are. When a NodePool carries another hash version (stamped by another Karpenter release, or by
karpy before it computed Karpenter's hash), its NodeClaims of another version are re-stamped
first, as Karpenter does: their old hashes were computed another way, and comparing them would
report every node as drifted. NodeClaims already marked Drifted get the new version but keep
their hash, since whether they are still drifted cannot be known. The NodePool is stamped only
once all its NodeClaims are, so a failed re-stamp is retried.
"""

from __future__ import annotations

from typing import Any, Final

from karpy.apis.descriptors import NODECLAIMS, NODEPOOLS
from karpy.apis.objects import get_condition
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
    LABEL_NODEPOOL,
    NODEPOOL_HASH_VERSION,
)
from karpy.controllers.nodepool.hash import hash_annotations
from karpy.kube import Client, Clock, Informer, KubeError, NotFoundError, RealClock, Result
from karpy.kube.builder import Builder

__all__ = ["NAME", "NodePoolHashController"]

NAME = "nodepool.hash"

JSON = dict[str, Any]


def _annotations(obj: JSON) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


class NodePoolHashController:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodepools: Informer,
        nodeclaims: Informer,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodepools = nodepools
        self.nodeclaims = nodeclaims
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools).workers(10).log_kind("NodePool")

    async def reconcile(self, name: str) -> Result | None:
        pool = self.nodepools.get(name)
        if pool is None:
            return None
        desired = hash_annotations(pool)
        current = _annotations(pool)
        if current.get(ANNOTATION_NODEPOOL_HASH_VERSION) != NODEPOOL_HASH_VERSION:
            await self._restamp_nodeclaims(name, desired[ANNOTATION_NODEPOOL_HASH])
        if any(current.get(k) != v for k, v in desired.items()):
            try:
                await self.client.patch(NODEPOOLS, name, {"metadata": {"annotations": desired}})
            except NotFoundError:
                return None
        return None

    async def _restamp_nodeclaims(self, pool: str, pool_hash: str) -> None:
        """Re-stamp every NodeClaim of `pool` with another hash version; a failure on one does
        not stop the others, and the first is raised at the end."""
        failure: KubeError | None = None
        for claim in self.nodeclaims.list():
            meta = claim.get("metadata") or {}
            if (meta.get("labels") or {}).get(LABEL_NODEPOOL) != pool:
                continue
            if (meta.get("annotations") or {}).get(
                ANNOTATION_NODEPOOL_HASH_VERSION
            ) == NODEPOOL_HASH_VERSION:
                continue
            annotations = {ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION}
            if get_condition(claim, cond.NODECLAIM_DRIFTED) is None:
                annotations[ANNOTATION_NODEPOOL_HASH] = pool_hash
            try:
                await self.client.patch(
                    NODECLAIMS, str(meta.get("name")), {"metadata": {"annotations": annotations}}
                )
            except NotFoundError:
                continue
            except KubeError as err:
                failure = failure or err
        if failure is not None:
            raise failure
