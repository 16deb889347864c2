"""The `Drifted` condition: a launched NodeClaim no longer matches what its NodePool (or
NodeClass) would launch now. Checked in Karpenter's order, the first reason wins:

1. `NodePoolDrifted`: the NodePool's `karpenter.sh/nodepool-hash` differs from the NodeClaim's,
   compared only when both carry `karpenter.sh/nodepool-hash-version` and the versions match
   (the hash controller re-stamps NodeClaims on a version change);
2. `RequirementsDrifted`: the NodeClaim's labels, as `In` requirements, are not strictly
   compatible with the NodePool's requirements plus those of the SchedulingConfigs that apply
   to its NodeClass (karpy's extension: tightening a guard rail rolls the fleet);
3. `InstanceTypeNotFound`: for NodeClaims older than an hour, looked at most every 30 minutes,
   the instance type is gone from the NodePool's instance types or has no offering for the
   NodeClaim's zone and capacity type (a reserved NodeClaim also matches on-demand);
4. the provider's `is_drifted` (kwok: the KWOKNodeClass changed since the instance launched).

Not drifted clears the condition. Every NodeClaim is looked at again after 5 minutes, and at
once when its NodePool's spec, its NodeClass or a SchedulingConfig changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

import pydantic
import structlog

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import is_condition_true, is_deleting, label, parse_time
from karpy.apis.v1 import NodeClaim, NodePool
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.common.status import write_conditions
from karpy.controllers.nodepool.hash import NODEPOOL_HASH_VERSION, nodepool_hash
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import RequirementError, Requirements
from karpy.state.inputs import guardrails, nodepool_nodeclass

__all__ = ["DRIFT_NAME", "DriftController", "nodepool_drifted", "requirements_drifted"]

DRIFT_NAME: Final = "nodeclaim.drift"
RECHECK: Final = 300.0
INSTANCE_TYPE_MIN_AGE: Final = timedelta(hours=1)
INSTANCE_TYPE_RECHECK: Final = 1800.0

log = structlog.get_logger("karpy.controllers.nodeclaim.drift")

JSON = dict[str, Any]


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def nodepool_drifted(pool: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """The NodePool's template hash differs from the one the NodeClaim was launched with (only
    when both were stamped with the same hash version).

    For the current version the NodePool's hash is computed from its spec rather than read from
    its annotation: right after an edit the provisioner already stamps new NodeClaims with the
    new hash while the annotation still holds the old one, and they must not look drifted."""
    pa, ca = _annotations(pool), _annotations(claim)
    version = pa.get(ANNOTATION_NODEPOOL_HASH_VERSION)
    if not version or version != ca.get(ANNOTATION_NODEPOOL_HASH_VERSION):
        return False
    claim_hash = ca.get(ANNOTATION_NODEPOOL_HASH)
    if version == NODEPOOL_HASH_VERSION:
        pool_hash: Any = nodepool_hash(pool)
    else:
        pool_hash = pa.get(ANNOTATION_NODEPOOL_HASH)
    return bool(pool_hash) and bool(claim_hash) and pool_hash != claim_hash


def requirements_drifted(
    pool: Mapping[str, Any], claim: Mapping[str, Any], configs: Sequence[Mapping[str, Any]] = ()
) -> bool:
    """The NodeClaim's labels no longer satisfy every requirement of the NodePool and of the
    SchedulingConfigs that apply to its NodeClass."""
    template = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    try:
        wanted = Requirements.from_node_selector_terms(template.get("requirements") or ())
        nodeclass = nodepool_nodeclass(pool)
        for rail in guardrails(configs):
            if rail.applies_to(nodeclass):
                wanted = wanted.union(rail.requirements)
    except (RequirementError, ValueError):
        return False  # validation reports the NodePool; never drift on unreadable input
    labels = (claim.get("metadata") or {}).get("labels") or {}
    return Requirements.from_labels(labels).strict_compatible(wanted) is not None


def instance_type_missing(types: Iterable[InstanceType], claim: Mapping[str, Any]) -> bool:
    """The NodeClaim's instance type is gone, or has no offering for its zone and capacity
    type (reserved capacity also matches on-demand offerings)."""
    name = label(claim, LABEL_INSTANCE_TYPE)
    found = next((t for t in types if t.name == name), None)
    if found is None:
        return True
    zone = label(claim, LABEL_TOPOLOGY_ZONE)
    capacity = label(claim, LABEL_CAPACITY_TYPE)
    accepted = {capacity}
    if capacity == CAPACITY_TYPE_RESERVED:
        accepted.add(CAPACITY_TYPE_ON_DEMAND)
    return not any(
        (not zone or o.zone == zone) and (not capacity or o.capacity_type in accepted)
        for o in found.offerings
    )


class DriftController:
    """Keeps `Drifted` on each launched NodeClaim, with the reason."""

    name: Final = DRIFT_NAME

    def __init__(
        self,
        *,
        client: Client,
        nodeclaims: Informer,
        nodepools: Informer,
        cloud_provider: CloudProvider,
        nodeclasses: Iterable[Informer] = (),
        configs: Informer | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.configs = configs
        self.nodeclaims = nodeclaims
        self.nodepools = nodepools
        self.cloud_provider = cloud_provider
        self.nodeclasses = tuple(nodeclasses)
        self.clock = clock or RealClock()
        self._pool_generations: dict[str, object] = {}
        self._type_checked: dict[str, tuple[float, bool]] = {}
        self._announced: dict[str, str] = {}
        """The drift reason last logged per NodeClaim: the cache may still show the old
        condition for a reconcile or two after the write, which must not log it again."""

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclaims)
        builder.watches(self.nodepools, mapper=self._claims_of_pool)
        for informer in self.nodeclasses:
            builder.watches(informer, mapper=self._claims_of_nodeclass)
        if self.configs is not None:
            builder.watches(self.configs, mapper=lambda _config: self._claim_names(bool))
        builder.workers(10).log_kind("NodeClaim")

    def _claim_names(self, match: Any) -> list[str]:
        return [
            str((c.get("metadata") or {}).get("name")) for c in self.nodeclaims.list() if match(c)
        ]

    def _claims_of_pool(self, pool: JSON) -> Iterable[str]:
        meta = pool.get("metadata") or {}
        name = str(meta.get("name", ""))
        stamp = (
            meta.get("uid"),
            meta.get("generation"),
            _annotations(pool).get(ANNOTATION_NODEPOOL_HASH),
        )
        if self._pool_generations.get(name) == stamp:
            return []
        self._pool_generations[name] = stamp
        return self._claim_names(lambda c: label(c, LABEL_NODEPOOL) == name)

    def _claims_of_nodeclass(self, nodeclass: JSON) -> Iterable[str]:
        name = str((nodeclass.get("metadata") or {}).get("name", ""))
        kind = str(nodeclass.get("kind") or "")
        return self._claim_names(
            lambda c: (
                ((c.get("spec") or {}).get("nodeClassRef") or {}).get("name") == name
                and (
                    not kind
                    or ((c.get("spec") or {}).get("nodeClassRef") or {}).get("kind") == kind
                )
            )
        )

    async def reconcile(self, name: str) -> Result | None:
        claim = self.nodeclaims.get(name)
        if claim is None or is_deleting(claim):
            self._type_checked.pop(name, None)
            self._announced.pop(name, None)
            return None
        if not is_condition_true(claim, cond.NODECLAIM_LAUNCHED):
            return None
        pool = self.nodepools.get(label(claim, LABEL_NODEPOOL))
        if pool is None:
            return None
        reason = await self.drift_reason(pool, claim)
        conditions = Conditions.of(claim, now=self.clock.wall())
        if reason is None:
            conditions.remove(cond.NODECLAIM_DRIFTED)
            self._announced.pop(name, None)
        else:
            current = conditions.get(cond.NODECLAIM_DRIFTED)
            fresh = current is None or current.get("reason") != reason
            if fresh and self._announced.get(name) != reason:
                log.info("marking drifted", NodeClaim={"name": name}, reason=reason)
            self._announced[name] = reason
            conditions.set(cond.NODECLAIM_DRIFTED, cond.STATUS_TRUE, reason=reason, message=reason)
        result = await write_conditions(
            self.client, resource=NODECLAIMS, obj=claim, conditions=conditions
        )
        return result if result is not None else Result(requeue_after=RECHECK)

    async def drift_reason(self, pool: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
        """Why the NodeClaim is drifted, or None."""
        if nodepool_drifted(pool, claim):
            return cond.REASON_NODEPOOL_DRIFTED
        configs = self.configs.list() if self.configs is not None else ()
        if requirements_drifted(pool, claim, configs):
            return cond.REASON_REQUIREMENTS_DRIFTED
        if await self._instance_type_missing(pool, claim):
            return cond.REASON_INSTANCE_TYPE_NOT_FOUND
        try:
            model = NodeClaim.model_validate(claim)
        except pydantic.ValidationError:
            return None
        reason = await self.cloud_provider.is_drifted(model)
        return reason or None

    async def _instance_type_missing(
        self, pool: Mapping[str, Any], claim: Mapping[str, Any]
    ) -> bool:
        meta = claim.get("metadata") or {}
        name = str(meta.get("name") or "")
        created = parse_time(meta.get("creationTimestamp"))
        now: datetime = self.clock.wall()
        if created is None or now - created < INSTANCE_TYPE_MIN_AGE:
            return False
        checked = self._type_checked.get(name)
        if checked is not None and (
            checked[1] or self.clock.now() - checked[0] < INSTANCE_TYPE_RECHECK
        ):
            return checked[1]
        try:
            types = await self.cloud_provider.get_instance_types(NodePool.model_validate(pool))
        except pydantic.ValidationError:
            return False
        missing = instance_type_missing(types, claim)
        self._type_checked[name] = (self.clock.now(), missing)
        return missing
