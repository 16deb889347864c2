"""`nodeclaim.lifecycle`: from a new NodeClaim to an initialized node, or to its deletion.

Per NodeClaim, level-triggered from what the caches show: add the `karpenter.sh/termination`
finalizer before anything is launched, then launch, registration, initialization and liveness,
then write the metadata and the status (conditions Launched, Registered, Initialized rolled up
into Ready; providerID, imageID, capacity, allocatable, nodeName) if they changed. Every write
carries the resourceVersion it was computed from, so a stale view fails with a conflict and is
retried instead of overwriting another controller's conditions.

Liveness: a NodeClaim not launched within LAUNCH_TIMEOUT, or whose Node has not registered
within REGISTRATION_TIMEOUT, is deleted (its pods are provisioned for again).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

import structlog

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import has_unregistered_taint
from karpy.apis.v1 import NodeClaim, labels
from karpy.apis.v1 import conditions as c
from karpy.cloudprovider.types import (
    CloudProvider,
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from karpy.controllers.common.metrics import count_disrupted
from karpy.controllers.nodeclaim.lifecycle.initialization import why_not_initialized
from karpy.controllers.nodeclaim.lifecycle.launch import Launcher
from karpy.controllers.nodeclaim.lifecycle.metrics import NODES_CREATED
from karpy.controllers.nodeclaim.lifecycle.registration import registration_patch
from karpy.controllers.provisioning.nomination import nominate_pods
from karpy.kube import jsonio
from karpy.kube.builder import Builder
from karpy.kube.client import Client
from karpy.kube.clock import Clock, RealClock
from karpy.kube.controller import Result
from karpy.kube.errors import ConflictError, NotFoundError
from karpy.kube.events import WARNING, EventRecorder
from karpy.kube.informer import Informer
from karpy.kube.resources import NODES
from karpy.kube.store import INDEX_PROVIDER_ID
from karpy.state import Cluster
from karpy.state.nodepoolhealth import NodePoolHealth

__all__ = ["NAME", "Lifecycle"]

JSON = dict[str, Any]
NAME = "nodeclaim.lifecycle"
log = structlog.get_logger("karpy.controllers.nodeclaim.lifecycle")
MESSAGE_LIMIT = 300
REMEMBERED = 10_000


class _Once:
    """NodeClaim UIDs a transition was already reported for. A reconcile may run again on a
    cache that has not yet seen its own status write; this keeps that repeat from logging and
    counting the transition twice. Bounded: the oldest UIDs are forgotten first."""

    def __init__(self) -> None:
        self._uids: dict[str, None] = {}

    def first(self, work: JSON) -> bool:
        uid = str((work.get("metadata") or {}).get("uid") or "")
        if uid in self._uids:
            return False
        self._uids[uid] = None
        if len(self._uids) > REMEMBERED:
            self._uids.pop(next(iter(self._uids)))
        return True


class _Stop(Exception):
    """The NodeClaim was deleted; nothing more to do for it."""


def _truncate(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


def _projected(node: JSON, patch: JSON) -> JSON:
    """`node` as it will be once the registration patch applies (taints replaced)."""
    return {**node, "spec": {**(node.get("spec") or {}), **(patch.get("spec") or {})}}


def _rv(obj: JSON) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _with_kind(obj: JSON) -> JSON:
    return {**obj, "apiVersion": f"{labels.GROUP}/v1", "kind": "NodeClaim"}


class Lifecycle:
    """The reconcile of `nodeclaim.lifecycle`; `setup()` wires it to the informers."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        claims: Informer,
        nodes: Informer,
        cloud_provider: CloudProvider,
        events: EventRecorder,
        launch_timeout: timedelta,
        registration_timeout: timedelta,
        health: NodePoolHealth | None = None,
        cluster: Cluster | None = None,
        pods: Informer | None = None,
        clock: Clock | None = None,
        workers: int = 50,
    ) -> None:
        self.client = client
        self.workers = workers
        self.claims = claims
        self.nodes = nodes
        self.events = events
        self.clock = clock or RealClock()
        self.launcher = Launcher(provider=cloud_provider, clock=self.clock)
        self.launch_timeout = launch_timeout
        self.registration_timeout = registration_timeout
        self.health = health
        self.cluster = cluster
        self.pods = pods
        self._registered = _Once()
        self._initialized = _Once()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.claims)
        builder.watches(self.nodes, mapper=self._claims_of_node)
        builder.workers(self.workers).log_kind("NodeClaim")

    def _claims_of_node(self, node: JSON) -> list[str]:
        provider_id = (node.get("spec") or {}).get("providerID")
        if not provider_id:
            return []
        return [
            str((claim.get("metadata") or {}).get("name"))
            for claim in self.claims.by_index(INDEX_PROVIDER_ID, str(provider_id))
        ]

    # -- reconcile --------------------------------------------------------------------------------

    async def reconcile(self, name: str) -> Result | None:
        try:
            return await self._reconcile(name)
        except ConflictError:
            # Computed from a view the cache had not caught up with: look again shortly.
            return Result(requeue=True)

    async def _reconcile(self, name: str) -> Result | None:
        claim = self.claims.get(name)
        if claim is None:
            return None
        meta = claim.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return None  # the termination controller owns it now
        if labels.FINALIZER_TERMINATION not in (meta.get("finalizers") or ()):
            claim = await self._add_finalizer(claim)
        # A JSON round trip copies a NodeClaim (hundreds of instance types in its requirements)
        # several times faster than copy.deepcopy, which was a hot spot of launch bursts.
        work: JSON = jsonio.loads(jsonio.dumps(claim))
        status: JSON = work.setdefault("status", {})
        generation = (work.get("metadata") or {}).get("generation")
        conds = Conditions(
            status.setdefault("conditions", []),
            now=self.clock.wall(),
            generation=generation if isinstance(generation, int) else None,
            dependents=c.NODECLAIM_READY_DEPENDENTS,
        )
        conds.initialize()
        error: Exception | None = None
        try:
            await self._launch(work, conds)
            node = self._node_for(work, conds)
            if node is not None:
                node = await self._register(work, node, conds)
                await self._initialize(work, node, conds)
        except _Stop:
            return None
        except ConflictError:
            raise
        except Exception as exc:  # written below, then retried with backoff
            error = exc
        try:
            # Liveness runs even when a step failed: a launch that keeps failing times out.
            requeue = await self._liveness(work, conds)
        except _Stop:
            return None
        conds.compute_root()
        await self._write(claim, work)
        if error is not None:
            raise error
        return Result(requeue_after=requeue) if requeue is not None else None

    async def _add_finalizer(self, claim: JSON) -> JSON:
        meta = claim.get("metadata") or {}
        finalizers = [*(meta.get("finalizers") or ()), labels.FINALIZER_TERMINATION]
        patched: JSON = await self.client.patch(
            NODECLAIMS,
            str(meta.get("name")),
            {
                "metadata": {
                    "finalizers": finalizers,
                    "resourceVersion": meta.get("resourceVersion"),
                }
            },
        )
        return patched

    async def _write(self, original: JSON, work: JSON) -> None:
        name = str((work.get("metadata") or {}).get("name"))
        rv = (original.get("metadata") or {}).get("resourceVersion")
        changed: JSON = {}
        for key in ("labels", "annotations"):
            new = (work.get("metadata") or {}).get(key) or {}
            if new != ((original.get("metadata") or {}).get(key) or {}):
                changed[key] = new
        if changed:
            patched = await self.client.patch(
                NODECLAIMS,
                name,
                {"metadata": {**changed, "resourceVersion": rv}},
            )
            rv = (patched.get("metadata") or {}).get("resourceVersion")
        if (work.get("status") or {}) != (original.get("status") or {}):
            await self.client.patch_status(
                NODECLAIMS,
                name,
                {"metadata": {"resourceVersion": rv}, "status": work["status"]},
            )

    async def _delete(self, work: JSON, *, reason: str) -> None:
        meta = work.get("metadata") or {}
        try:
            await self.client.delete(NODECLAIMS, str(meta.get("name")), uid=meta.get("uid"))
        except NotFoundError:
            return
        count_disrupted(work, reason)
        log.info("deleted nodeclaim", reason=reason)

    def _record_failure(self, work: JSON, *, reason: str, message: str) -> None:
        pool = ((work.get("metadata") or {}).get("labels") or {}).get(labels.LABEL_NODEPOOL)
        if self.health is not None and pool:
            self.health.record_failure(pool, reason=reason, message=message)

    # -- launch -----------------------------------------------------------------------------------

    async def _launch(self, work: JSON, conds: Conditions) -> None:
        if conds.is_true(c.NODECLAIM_LAUNCHED):
            return
        try:
            launched, fresh = await self.launcher.launch(NodeClaim.model_validate(work))
        except InsufficientCapacityError as err:
            self.events.publish(
                _with_kind(work),
                type=WARNING,
                reason="InsufficientCapacityError",
                message=_truncate(f"NodeClaim {work['metadata']['name']} event: {err}"),
            )
            log.error("failed launching nodeclaim", error=str(err))
            await self._delete(work, reason="insufficient_capacity")
            raise _Stop from None
        except NodeClassNotReadyError as err:
            log.error("failed launching nodeclaim", error=str(err))
            self.events.publish(
                _with_kind(work),
                type=WARNING,
                reason="NodeClassNotReady",
                message=_truncate(f"NodeClaim {work['metadata']['name']} event: {err}"),
            )
            await self._delete(work, reason="nodeclass_not_ready")
            raise _Stop from None
        except CreateError as err:
            conds.set_unknown(c.NODECLAIM_LAUNCHED, reason=err.reason, message=_truncate(str(err)))
            self._record_failure(work, reason=err.reason, message=_truncate(str(err)))
            raise
        except Exception as err:
            conds.set_unknown(
                c.NODECLAIM_LAUNCHED,
                reason=c.REASON_LAUNCH_FAILED,
                message=_truncate(str(err) or type(err).__name__),
            )
            raise
        meta = work.setdefault("metadata", {})
        meta["labels"] = {**(launched.metadata.labels or {}), **(meta.get("labels") or {})}
        # The provider's annotations win, as in Karpenter (the NodeClass hash stamped at launch).
        if launched.metadata.annotations:
            meta["annotations"] = {
                **(meta.get("annotations") or {}),
                **launched.metadata.annotations,
            }
        status = work["status"]
        details = launched.status.to_dict() if launched.status else {}
        for field in ("providerID", "imageID", "capacity", "allocatable"):
            if details.get(field):
                status[field] = details[field]
        conds.set_true(c.NODECLAIM_LAUNCHED)
        if not fresh:
            return
        log.info(
            "launched nodeclaim",
            **{
                "provider-id": status.get("providerID"),
                "instance-type": meta["labels"].get(labels.LABEL_INSTANCE_TYPE),
                "zone": meta["labels"].get(labels.LABEL_TOPOLOGY_ZONE),
                "capacity-type": meta["labels"].get(labels.LABEL_CAPACITY_TYPE),
                "allocatable": status.get("allocatable"),
            },
        )

    # -- registration -----------------------------------------------------------------------------

    def _node_for(self, work: JSON, conds: Conditions) -> JSON | None:
        if not conds.is_true(c.NODECLAIM_LAUNCHED):
            return None
        provider_id = str((work.get("status") or {}).get("providerID") or "")
        nodes = self.nodes.by_index(INDEX_PROVIDER_ID, provider_id) if provider_id else []
        if not nodes:
            if not conds.is_true(c.NODECLAIM_REGISTERED):
                conds.set_unknown(
                    c.NODECLAIM_REGISTERED,
                    reason=c.REASON_NODE_NOT_FOUND,
                    message="Node not registered with cluster",
                )
            elif not conds.is_true(c.NODECLAIM_INITIALIZED):
                conds.set_unknown(
                    c.NODECLAIM_INITIALIZED,
                    reason=c.REASON_NODE_NOT_FOUND,
                    message="Node not registered with cluster",
                )
            return None
        if len(nodes) > 1:
            conds.set_false(
                c.NODECLAIM_REGISTERED,
                reason=c.REASON_MULTIPLE_NODES_FOUND,
                message=f"invariant violated, matched multiple nodes for {provider_id}",
            )
            return None
        return nodes[0]

    async def _register(self, work: JSON, node: JSON, conds: Conditions) -> JSON:
        """Register `node` for the claim; returns the Node as it now is."""
        node_meta = node.get("metadata") or {}
        node_name = str(node_meta.get("name"))
        if conds.is_true(c.NODECLAIM_REGISTERED):
            work["status"]["nodeName"] = node_name
            return node
        labelled = (node_meta.get("labels") or {}).get(labels.LABEL_NODE_REGISTERED) == "true"
        if not labelled and not has_unregistered_taint(node):
            log.info(
                "node registered without the unregistered taint; it may have taken pods "
                "before karpy synced it",
                Node={"name": node_name},
            )
        claim_name = str((work.get("metadata") or {}).get("name"))
        if self.cluster is not None and self.pods is not None:
            # Tell kube-scheduler where the provisioner planned the pods, before the node
            # becomes schedulable (see karpy.controllers.provisioning.nomination).
            planned = self.cluster.take_plan(claim_name)
            if planned:
                nominated = await nominate_pods(
                    self.client,
                    self.pods,
                    planned,
                    node_name,
                    ledger=self.cluster.pod_nominations,
                )
                log.debug(
                    "nominated planned pods",
                    Node={"name": node_name},
                    planned=len(planned),
                    nominated=nominated,
                )
        registered: JSON = await self.client.patch(NODES, node_name, registration_patch(node, work))
        work["status"]["nodeName"] = node_name
        conds.set_true(c.NODECLAIM_REGISTERED)
        if not self._registered.first(work):
            return registered  # a repeat after a failed status write: counted and logged
        pool = ((work.get("metadata") or {}).get("labels") or {}).get(labels.LABEL_NODEPOOL, "")
        NODES_CREATED.labels(pool).inc()
        if self.health is not None and pool:
            self.health.record_success(pool)
        log.info(
            "registered nodeclaim",
            Node={"name": node_name},
            **{"provider-id": (work.get("status") or {}).get("providerID")},
        )
        return registered

    # -- initialization ---------------------------------------------------------------------------

    async def _initialize(self, work: JSON, node: JSON, conds: Conditions) -> None:
        if not conds.is_true(c.NODECLAIM_REGISTERED) or conds.is_true(c.NODECLAIM_INITIALIZED):
            return
        # Judge the newer of the cache's view and the one registration just wrote.
        cached = self.nodes.get(str((node.get("metadata") or {}).get("name")))
        current = node if cached is None or _rv(cached) < _rv(node) else cached
        if has_unregistered_taint(current):
            conds.set_unknown(
                c.NODECLAIM_INITIALIZED,
                reason=c.REASON_KNOWN_EPHEMERAL_TAINTS_EXIST,
                message=f'KnownEphemeralTaint "{labels.TAINT_UNREGISTERED_KEY}:NoExecute" still '
                "exists",
            )
            return
        blocked = why_not_initialized(current, work)
        if blocked is not None:
            conds.set_unknown(c.NODECLAIM_INITIALIZED, reason=blocked[0], message=blocked[1])
            return
        name = str((current.get("metadata") or {}).get("name"))
        current_labels = (current.get("metadata") or {}).get("labels") or {}
        if current_labels.get(labels.LABEL_NODE_INITIALIZED) != "true":
            await self.client.patch(
                NODES, name, {"metadata": {"labels": {labels.LABEL_NODE_INITIALIZED: "true"}}}
            )
        conds.set_true(c.NODECLAIM_INITIALIZED)
        if not self._initialized.first(work):
            return
        log.info(
            "initialized nodeclaim",
            Node={"name": name},
            allocatable=(current.get("status") or {}).get("allocatable"),
        )

    # -- liveness ---------------------------------------------------------------------------------

    async def _liveness(self, work: JSON, conds: Conditions) -> float | None:
        now = conds.now
        if not conds.is_true(c.NODECLAIM_LAUNCHED):
            since = conds.since(c.NODECLAIM_LAUNCHED) or now
            left = (since + self.launch_timeout - now).total_seconds()
            if left > 0:
                return left
            launched = conds.get(c.NODECLAIM_LAUNCHED) or {}
            self._record_failure(
                work,
                reason=str(launched.get("reason") or c.REASON_LAUNCH_FAILED),
                message=str(launched.get("message") or "launch timed out"),
            )
            log.info("terminating due to launch timeout", timeout=str(self.launch_timeout))
            await self._delete(work, reason="launch_timeout")
            raise _Stop
        if conds.is_true(c.NODECLAIM_REGISTERED):
            return None
        since = conds.since(c.NODECLAIM_REGISTERED) or now
        left = (since + self.registration_timeout - now).total_seconds()
        if left > 0:
            return left
        self._record_failure(
            work, reason=c.REASON_REGISTRATION_FAILED, message="Failed to register node"
        )
        log.info("terminating due to registration timeout", timeout=str(self.registration_timeout))
        await self._delete(work, reason="registration_timeout")
        raise _Stop
