"""The kwok cloud provider: instances are Node objects in the cluster itself.

Launching creates a Node named after the NodeClaim (so a repeated launch after a crash finds the
first one instead of making a second: the NodeClaim's name and UID are the idempotency key),
after the KWOKNodeClass's `nodeRegistrationDelay`. With a delay the provider returns at once and
the simulator's instance controller creates the Node when the delay has passed, counting from
the NodeClaim's `Launched` condition, so a restart in between loses nothing. The node/pod
simulator (`simulator.py`) then plays the kubelet.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from karpy.apis.descriptors import KWOKNODECLASSES, NODEOVERLAYS
from karpy.apis.kwok.v1alpha1 import GROUP, KWOKNodeClass
from karpy.apis.kwok.v1alpha1.kwoknodeclass import KIND
from karpy.apis.objects import format_time, is_condition_true, is_deleting
from karpy.apis.v1 import NodeClaim, NodePool, conditions
from karpy.apis.v1.nodeclaim import NodeClaimStatus
from karpy.cloudprovider.kwok.drift import ANNOTATION_NODECLASS_HASH, nodeclass_hash
from karpy.cloudprovider.kwok.instances import (
    ANNOTATION_KWOK_NODE,
    ANNOTATION_NODECLAIM_UID,
    KWOK_NODE_FAKE,
    PROVIDER_ID_PREFIX,
    node_for,
    node_name_of,
    plan,
)
from karpy.cloudprovider.overlays import LaunchOverlays
from karpy.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.errors import AlreadyExistsError, NotFoundError, OutcomeUnknownError
from karpy.kube.resources import NODES
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import PODS, parse_resources

__all__ = ["KwokCloudProvider"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.cloudprovider.kwok")

_REPAIR_TOLERATION = timedelta(minutes=10)


class KwokCloudProvider:
    """A `CloudProvider` whose instances are Nodes with providerID `kwok://<name>`."""

    def __init__(
        self,
        *,
        client: Client,
        cache: Cache,
        instance_types: Sequence[InstanceType],
        node_overlays: bool = False,
    ) -> None:
        self.client = client
        self.base_types = list(instance_types)
        # With the NodeOverlay gate, a launch picks the cheapest type at the overlays' prices
        # (and with their capacity), as the provisioner planned it.
        self.overlays = LaunchOverlays(cache.informer(NODEOVERLAYS).list if node_overlays else None)
        self.nodeclasses = cache.informer(KWOKNODECLASSES)
        self.nodes = cache.informer(NODES)
        self._types_cache: dict[tuple[str, str], list[InstanceType]] = {}

    @property
    def name(self) -> str:
        return "kwok"

    # -- node classes -----------------------------------------------------------------------------

    async def nodeclass(self, name: str) -> JSON | None:
        """The KWOKNodeClass (cache first; the API when the cache has not seen it yet)."""
        found = self.nodeclasses.get(name)
        if found is not None:
            return found
        try:
            return await self.client.get(KWOKNODECLASSES, name)
        except NotFoundError:
            return None

    async def _nodeclass_for(self, claim: NodeClaim) -> JSON:
        ref = claim.spec.node_class_ref
        if ref.group_name() != GROUP or ref.kind != KIND:
            raise NodeClassNotReadyError(
                f"nodeClassRef {ref.group_name()}/{ref.kind} is not served by the kwok provider"
            )
        nodeclass = await self.nodeclass(ref.name)
        if nodeclass is None:
            raise InsufficientCapacityError(f'KWOKNodeClass "{ref.name}" not found')
        if is_deleting(nodeclass):
            raise NodeClassNotReadyError(f'KWOKNodeClass "{ref.name}" is terminating')
        if not is_condition_true(nodeclass, conditions.NODECLASS_READY):
            raise NodeClassNotReadyError(f'KWOKNodeClass "{ref.name}" is not ready')
        return nodeclass

    def registration_delay(self, nodeclass: Mapping[str, Any] | None) -> timedelta:
        if nodeclass is None:
            return timedelta(0)
        return KWOKNodeClass.model_validate(nodeclass).spec.registration_delay()

    def types_for(self, nodeclass: Mapping[str, Any] | None) -> list[InstanceType]:
        """The catalogue, with the NodeClass's maxPods and reservedResources applied."""
        if nodeclass is None:
            return self.base_types
        spec = nodeclass.get("spec") or {}
        if spec.get("maxPods") is None and not spec.get("reservedResources"):
            return self.base_types
        meta = nodeclass.get("metadata") or {}
        key = (str(meta.get("name")), str(meta.get("resourceVersion")))
        cached = self._types_cache.get(key)
        if cached is None:
            cached = [_override(t, spec) for t in self.base_types]
            self._types_cache = {key: cached}
        return cached

    # -- CloudProvider ----------------------------------------------------------------------------

    async def create(self, claim: NodeClaim) -> NodeClaim:
        nodeclass = await self._nodeclass_for(claim)
        name = claim.name
        uid = claim.metadata.uid or ""
        existing = self.nodes.get(name)
        if existing is not None:
            return self._adopt(claim, existing)
        reqs = Requirements.from_node_selector_terms(r.to_dict() for r in claim.spec.requirements)
        requests = parse_resources(
            claim.spec.resources.requests if claim.spec.resources else None,
            field="spec.resources.requests",
        )
        choice = plan(reqs, requests, self.overlays.apply(claim, self.types_for(nodeclass)))
        node_labels = choice.labels(reqs)
        node_labels.update(claim.metadata.labels or {})
        node = node_for(
            name=name,
            claim_uid=uid,
            node_labels=node_labels,
            capacity=choice.instance_type.capacity,
            allocatable=choice.instance_type.allocatable,
            now=format_time(datetime.now(UTC)),
            annotations={
                ANNOTATION_NODECLASS_HASH: nodeclass_hash(nodeclass),
                ANNOTATION_KWOK_NODE: KWOK_NODE_FAKE,
            },
        )
        if self.registration_delay(nodeclass) <= timedelta(0):
            launched = self._adopt(claim, await self.create_node(node))
        else:
            launched = self._as_launched(claim, node)  # the simulator creates it later
        log.info(
            "launched kwok instance",
            NodeClaim={"name": name},
            **{
                "instance-type": choice.instance_type.name,
                "zone": choice.offering.zone,
                "capacity-type": choice.offering.capacity_type,
            },
        )
        return launched

    def _adopt(self, claim: NodeClaim, node: Mapping[str, Any]) -> NodeClaim:
        """The launched NodeClaim for a Node that exists: a repeated launch finds the first
        instance, unless the name belongs to another NodeClaim."""
        uid = claim.metadata.uid or ""
        owner = ((node.get("metadata") or {}).get("annotations") or {}).get(
            ANNOTATION_NODECLAIM_UID
        )
        if owner and uid and owner != uid:
            raise CreateError(
                f'node "{claim.name}" exists for another NodeClaim (uid {owner})',
                reason="NodeNameInUse",
            )
        return self._as_launched(claim, node)

    async def create_node(self, node: JSON) -> JSON:
        """Create the Node of an instance; an existing one (a repeat) is returned as is."""
        name = str(node["metadata"]["name"])
        try:
            created: JSON = await self.client.create(NODES, node)
            return created
        except AlreadyExistsError:
            pass
        except OutcomeUnknownError:
            log.warning("node create outcome unknown; looking", Node={"name": name})
        existing = await self._read_node(name)
        if existing is None:
            raise CreateError(f'node "{name}" could not be created', reason="NodeCreateFailed")
        return existing

    async def _read_node(self, name: str) -> JSON | None:
        try:
            node: JSON = await self.client.get(NODES, name)
            return node
        except NotFoundError:
            return None

    def _as_launched(self, claim: NodeClaim, node: Mapping[str, Any]) -> NodeClaim:
        meta = node.get("metadata") or {}
        status = node.get("status") or {}
        out = claim.model_copy(deep=True)
        out.metadata.labels = dict(meta.get("labels") or {})
        out.status = NodeClaimStatus.model_validate(
            {
                **(claim.status.to_dict() if claim.status else {}),
                "providerID": (node.get("spec") or {}).get("providerID"),
                "capacity": dict(status.get("capacity") or {}),
                "allocatable": dict(status.get("allocatable") or {}),
            }
        )
        return out

    async def delete(self, claim: NodeClaim) -> None:
        provider_id = (claim.status.provider_id if claim.status else None) or ""
        name = node_name_of(provider_id)
        if name is None:
            raise NodeClaimNotFoundError(f"no kwok instance for providerID {provider_id!r}")
        try:
            await self.client.delete(NODES, name)
        except NotFoundError:
            raise NodeClaimNotFoundError("instance already terminated") from None
        # The instance is the Node object itself: once its deletion is requested the
        # instance is gone (its finalizer belongs to the termination flow).
        raise NodeClaimNotFoundError("instance terminated")

    async def get(self, provider_id: str) -> NodeClaim:
        name = node_name_of(provider_id)
        if name is None:
            raise NodeClaimNotFoundError(f"no kwok instance for providerID {provider_id!r}")
        node = await self._read_node(name)
        if node is None or is_deleting(node):
            raise NodeClaimNotFoundError(f'instance "{provider_id}" not found')
        return self.claim_of(node)

    async def list(self) -> builtins.list[NodeClaim]:
        nodes = await self.client.list(NODES)
        return [
            self.claim_of(n)
            for n in nodes.items
            if str((n.get("spec") or {}).get("providerID") or "").startswith(PROVIDER_ID_PREFIX)
        ]

    def claim_of(self, node: Mapping[str, Any]) -> NodeClaim:
        """A NodeClaim describing the instance behind a kwok Node."""
        meta = node.get("metadata") or {}
        status = node.get("status") or {}
        node_labels = dict(meta.get("labels") or {})
        return NodeClaim.model_validate(
            {
                "metadata": {
                    "name": meta.get("name"),
                    "labels": node_labels,
                    "creationTimestamp": meta.get("creationTimestamp"),
                    "deletionTimestamp": meta.get("deletionTimestamp"),
                },
                "spec": {
                    "requirements": [],
                    "nodeClassRef": {
                        "group": GROUP,
                        "kind": KIND,
                        "name": node_labels.get(f"{GROUP}/{KIND.lower()}", "unknown"),
                    },
                },
                "status": {
                    "providerID": (node.get("spec") or {}).get("providerID"),
                    "capacity": dict(status.get("capacity") or {}),
                    "allocatable": dict(status.get("allocatable") or {}),
                },
            }
        )

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        ref = nodepool.spec.template.spec.node_class_ref
        nodeclass = await self.nodeclass(ref.name) if ref.kind == KIND else None
        return self.types_for(nodeclass)

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        """`NodeClassDrift` when the KWOKNodeClass's spec hash differs from the one stamped on
        the instance's Node at launch (Nodes without a stamp never drift)."""
        provider_id = (claim.status.provider_id if claim.status else None) or ""
        name = node_name_of(provider_id)
        node = self.nodes.get(name) if name else None
        stamped = (((node or {}).get("metadata") or {}).get("annotations") or {}).get(
            ANNOTATION_NODECLASS_HASH
        )
        if not stamped:
            return None
        ref = claim.spec.node_class_ref
        if ref.group_name() != GROUP or ref.kind != KIND:
            return None
        nodeclass = await self.nodeclass(ref.name)
        if nodeclass is None:
            return None
        return None if nodeclass_hash(nodeclass) == stamped else conditions.REASON_NODECLASS_DRIFT

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return [
            RepairPolicy(
                condition_type=conditions.CONDITION_READY,
                condition_status=conditions.STATUS_FALSE,
                toleration=_REPAIR_TOLERATION,
            ),
            RepairPolicy(
                condition_type=conditions.CONDITION_READY,
                condition_status=conditions.STATUS_UNKNOWN,
                toleration=_REPAIR_TOLERATION,
            ),
        ]


def _override(it: InstanceType, spec: Mapping[str, Any]) -> InstanceType:
    """`it` with a NodeClass's maxPods and reservedResources."""
    capacity = dict(it.capacity)
    if spec.get("maxPods") is not None:
        capacity[PODS] = int(spec["maxPods"])
    overhead = dict(it.overhead)
    reserved = spec.get("reservedResources")
    if reserved:
        overhead = parse_resources(reserved, field="spec.reservedResources")
    return InstanceType(
        name=it.name,
        capacity=capacity,
        offerings=it.offerings,
        requirements=it.requirements,
        overhead=overhead,
    )
