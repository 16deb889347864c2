"""`nodeclass`: resolve each EC2NodeClass against EC2, SSM and IAM and write what was found.

The status gets the subnets, security groups, AMIs, instance profile and the conditions (each
with the generation it describes, and `Ready` over them all); the object gets Karpenter's hash
annotations. A class that is not Ready is looked at again after a minute, a Ready one after five
(Karpenter's requeue times), so new subnets or AMIs show up without an edit; one with capacity
reservations every minute, or when a reservation ends if that is sooner.

The hash annotations follow Karpenter's `nodeclass.hash` controller: when the class carries
another hash version (stamped by another Karpenter release, or by karpy before it computed
Karpenter's hash), its NodeClaims of another version are re-stamped first, since comparing hashes
computed two ways would drift every node; NodeClaims already Drifted keep their hash.

The class carries the finalizer `karpenter.k8s.aws/termination`: once deleted, it waits while
NodeClaims still use it (a NodeClaim's deletion wakes it), then deletes the instance profiles and
launch templates karpy made for it, and lets it go.
"""

from __future__ import annotations

from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import KIND
from karpy.apis.descriptors import EC2NODECLASSES, NODECLAIMS
from karpy.apis.objects import get_condition
from karpy.apis.v1 import conditions as cond
from karpy.cloudprovider.aws.cleanup import NodeClassCleanup
from karpy.cloudprovider.aws.nodeclass import NodeClassResolver
from karpy.cloudprovider.aws.nodeclasshash import NODECLASS_HASH_VERSION, hash_annotations
from karpy.cloudprovider.aws.nodeclassread import read_nodeclass
from karpy.kube import Client, Clock, Informer, KubeError, NotFoundError, RealClock, Result
from karpy.kube.builder import Builder
from karpy.kube.client import PatchType

__all__ = ["NAME", "EC2NodeClassController", "nodeclaims_of"]

NAME: Final = "nodeclass"
NOT_READY_REQUEUE: Final = 60.0
READY_REQUEUE: Final = 300.0
IN_USE_REQUEUE: Final = 600.0
log = structlog.get_logger("karpy.cloudprovider.aws.nodeclass")

JSON = dict[str, Any]


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _nodeclass_of_claim(claim: JSON) -> str | None:
    ref = (claim.get("spec") or {}).get("nodeClassRef") or {}
    group = ref.get("group") or str(ref.get("apiVersion") or "").split("/", 1)[0]
    if group != aws.GROUP or ref.get("kind") != KIND:
        return None
    name = ref.get("name")
    return str(name) if name else None


def nodeclaims_of(nodeclaims: Informer, nodeclass: str) -> list[JSON]:
    """The NodeClaims whose nodeClassRef is this EC2NodeClass."""
    return [c for c in nodeclaims.list() if _nodeclass_of_claim(c) == nodeclass]


class EC2NodeClassController:
    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodeclasses: Informer,
        nodeclaims: Informer,
        resolver: NodeClassResolver,
        cleanup: NodeClassCleanup,
        ca_bundle: str | None = None,
        isolated_vpc: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.clock = clock or RealClock()
        self.nodeclasses = nodeclasses
        self.nodeclaims = nodeclaims
        self.resolver = resolver
        self.cleanup = cleanup
        self.ca_bundle = ca_bundle
        self.isolated_vpc = isolated_vpc

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclasses).watches_changes(
            self.nodeclaims,
            lambda old, new: _nodeclass_of_claim(old) if new is None and old else None,
        ).workers(10).log_kind("EC2NodeClass")

    async def reconcile(self, name: str) -> Result | None:
        obj = self.nodeclasses.get(name)
        if obj is None:
            return None
        try:
            if _meta(obj).get("deletionTimestamp"):
                return await self._finalize(name, obj)
            await self._add_finalizer(name, obj)
            nodeclass = read_nodeclass(obj)
            resolution = await self.resolver.resolve(nodeclass)
            resolved = resolution.apply(nodeclass)
            status: dict[str, Any] = resolved.status.to_dict() if resolved.status else {}
            if status != (obj.get("status") or {}):
                # Merge patch: lists are replaced whole; absent keys are cleared with null.
                cleared = {k: None for k in obj.get("status") or {} if k not in status}
                await self.client.patch_status(EC2NODECLASSES, name, {"status": status | cleared})
            await self._stamp_hash(name, obj)
        except NotFoundError:
            return None
        period = READY_REQUEUE if resolution.ready else NOT_READY_REQUEUE
        if resolution.requeue_after is not None:
            period = min(period, resolution.requeue_after)
        return Result(requeue_after=period)

    # -- hash ---------------------------------------------------------------------------------

    async def _stamp_hash(self, name: str, obj: JSON) -> None:
        desired = hash_annotations(obj, self.ca_bundle)
        current = _meta(obj).get("annotations") or {}
        if current.get(aws.ANNOTATION_EC2NODECLASS_HASH_VERSION) != NODECLASS_HASH_VERSION:
            await self._restamp_nodeclaims(name, desired[aws.ANNOTATION_EC2NODECLASS_HASH])
        if any(current.get(k) != v for k, v in desired.items()):
            await self.client.patch(EC2NODECLASSES, name, {"metadata": {"annotations": desired}})

    async def _restamp_nodeclaims(self, nodeclass: str, nodeclass_hash: str) -> None:
        """Give every NodeClaim of another hash version this version; a failure on one does
        not stop the others, and the first is raised at the end (the class is then not
        stamped, so this runs again)."""
        failure: KubeError | None = None
        for claim in nodeclaims_of(self.nodeclaims, nodeclass):
            annotations = _meta(claim).get("annotations") or {}
            if annotations.get(aws.ANNOTATION_EC2NODECLASS_HASH_VERSION) == NODECLASS_HASH_VERSION:
                continue
            patch = {aws.ANNOTATION_EC2NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION}
            if get_condition(claim, cond.NODECLAIM_DRIFTED) is None:
                patch[aws.ANNOTATION_EC2NODECLASS_HASH] = nodeclass_hash
            try:
                await self.client.patch(
                    NODECLAIMS, _meta(claim)["name"], {"metadata": {"annotations": patch}}
                )
            except NotFoundError:
                continue
            except KubeError as err:
                failure = failure or err
        if failure is not None:
            raise failure

    # -- finalizer ----------------------------------------------------------------------------

    async def _add_finalizer(self, name: str, obj: JSON) -> None:
        finalizers = list(_meta(obj).get("finalizers") or ())
        if aws.FINALIZER_TERMINATION in finalizers:
            return
        op = (
            {"op": "add", "path": "/metadata/finalizers/-", "value": aws.FINALIZER_TERMINATION}
            if finalizers
            else {"op": "add", "path": "/metadata/finalizers", "value": [aws.FINALIZER_TERMINATION]}
        )
        await self.client.patch(EC2NODECLASSES, name, [op], patch_type=PatchType.JSON)

    async def _finalize(self, name: str, obj: JSON) -> Result | None:
        finalizers = list(_meta(obj).get("finalizers") or ())
        if aws.FINALIZER_TERMINATION not in finalizers:
            return None
        users = nodeclaims_of(self.nodeclaims, name)
        if users:
            log.info(
                "waiting on nodeclaims to terminate",
                EC2NodeClass={"name": name},
                nodeclaims=sorted(_meta(c).get("name", "") for c in users)[:10],
            )
            return Result(requeue_after=IN_USE_REQUEUE)
        if not self.isolated_vpc:
            profiles = await self.cleanup.delete_instance_profiles(_meta(obj).get("uid"))
            if profiles:
                log.info("deleted instance profiles", EC2NodeClass={"name": name}, names=profiles)
        templates = await self.cleanup.delete_launch_templates(name)
        if templates:
            log.info("deleted launch templates", EC2NodeClass={"name": name}, names=templates)
        index = finalizers.index(aws.FINALIZER_TERMINATION)
        await self.client.patch(
            EC2NODECLASSES,
            name,
            [
                {
                    "op": "test",
                    "path": f"/metadata/finalizers/{index}",
                    "value": aws.FINALIZER_TERMINATION,
                },
                {"op": "remove", "path": f"/metadata/finalizers/{index}"},
            ],
            patch_type=PatchType.JSON,
        )
        return None
