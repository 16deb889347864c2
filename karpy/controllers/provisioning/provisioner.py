"""The provisioner: turn a batch of pending pods into NodeClaims.

A singleton loop (`provisioner`): wait for a batch of triggers, wait until cluster state is
synced (no NodeClaim created but not launched, so nothing is launched twice), then

1. snapshot the nodes (before listing pods, so a pod bound meanwhile is under-, never
   over-provisioned for);
2. gather pending pods kube-scheduler gave up on, validate them (ignored pods get an event),
   and add the pods of nodes being deleted;
3. schedule them off the event loop against the snapshot and the Ready NodePools (the engine's
   input is built by `karpy.state.inputs`, as `karpy simulate` builds it: volume topology,
   existing nodes and DaemonSet overhead alike);
4. create the NodeClaims (limits re-checked against live state before each create), record
   each in cluster state at once, and publish `Nominated` events; pods that cannot be placed get
   a `FailedScheduling` event saying why.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import is_condition_true
from karpy.apis.v1 import NodePool, conditions, labels
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.provisioning import metrics
from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.buffers import write_provisioning
from karpy.controllers.provisioning.nodeclaims import (
    ANNOTATION_PLAN,
    nodeclaim_for,
    plan_annotation,
)
from karpy.controllers.provisioning.nomination import awaiting_node, nominate_placements
from karpy.controllers.provisioning.validation import PodValidationError, validate_pod
from karpy.kube.client import Client
from karpy.kube.clock import Clock, RealClock
from karpy.kube.errors import KubeError, OutcomeUnknownError
from karpy.kube.events import NORMAL, WARNING, EventRecorder
from karpy.kube.offload import run_off_loop
from karpy.scheduling.engine.lp import warm_up
from karpy.scheduling.engine.model import (
    MinValuesPolicy,
    NewNodeClaim,
    NodePoolTemplate,
    PreferencePolicy,
    SchedulingResult,
)
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.instancetypes import selectable_keys
from karpy.scheduling.resources import ResourceMap, format_resources, parse_resources
from karpy.state import Cluster, ClusterSnapshot
from karpy.state import pods as podutil
from karpy.state.inputs import PodViews, build_input

__all__ = ["NAME", "Provisioner", "limits_exceeded", "well_known_labels"]

JSON = dict[str, Any]
NAME = "provisioner"
log = structlog.get_logger("karpy.controllers.provisioning")

MAX_LOGGED = 20
CAPACITY_BUFFER_POD = re.compile(r"/capacitybuffer-.+-\d+$")
"""The key of a CapacityBuffer's virtual pod (`karpy.state.inputs.virtual_pods` names them)."""
CREATE_CONCURRENCY = 25
SYNC_POLL = 0.2
UNSYNCED_LOG_EVERY = 30.0


def _ref(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    out = {"name": str(meta.get("name") or "")}
    if meta.get("namespace"):
        out["namespace"] = str(meta["namespace"])
    return out


def _names(keys: Sequence[str]) -> str:
    shown = ", ".join(keys[:MAX_LOGGED])
    if len(keys) > MAX_LOGGED:
        shown += f" and {len(keys) - MAX_LOGGED} other(s)"
    return shown


def limits_exceeded(limits: Mapping[str, Any] | None, usage: Mapping[str, int]) -> str | None:
    """Which limit `usage` already exceeds (Karpenter's `ExceededBy`), or None."""
    if not limits:
        return None
    parsed = parse_resources(limits, field="spec.limits")
    for name, limit in sorted(parsed.items()):
        if usage.get(name, 0) > limit:
            shown = format_resources({name: usage.get(name, 0)}).get(name)
            return f"{name} resource usage of {shown} exceeds limit of {limits[name]}"
    return None


def well_known_labels(templates: Sequence[NodePoolTemplate]) -> frozenset[str]:
    """Karpenter's well-known labels plus every label the provider's instance types carry
    (kwok's `karpenter.kwok.sh/*`, AWS's `karpenter.k8s.aws/*`): pods may select on those
    even though their domains are restricted, but not on those the provider keeps to itself
    (`selectable_keys`)."""
    keys = selectable_keys(it for t in templates for it in t.instance_types)
    return labels.WELL_KNOWN_LABELS | keys


@dataclass(frozen=True, slots=True)
class _Batch:
    """What one provisioning pass schedules."""

    snapshot: ClusterSnapshot
    pods: tuple[JSON, ...]
    templates: tuple[NodePoolTemplate, ...]


class Provisioner:
    """The `provisioner` singleton's reconcile, and the steps it is made of."""

    def __init__(
        self,
        *,
        client: Client,
        cluster: Cluster,
        cloud_provider: CloudProvider,
        events: EventRecorder,
        batcher: Batcher,
        clock: Clock | None = None,
        preference_policy: PreferencePolicy = "Respect",
        min_values_policy: MinValuesPolicy = "Strict",
        default_spread: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.cloud_provider = cloud_provider
        self.events = events
        self.batcher = batcher
        self.clock = clock or RealClock()
        self.preference_policy: PreferencePolicy = preference_policy
        self.min_values_policy: MinValuesPolicy = min_values_policy
        self.default_spread = tuple(default_spread)
        """kube-scheduler's cluster-default spread constraints (a setting)."""
        self.views = PodViews()
        self._batched = False
        self._warm = False
        self._unsynced_since: float | None = None
        self._last_unsynced_log = float("-inf")

    # -- the loop ---------------------------------------------------------------------------------

    async def reconcile(self, _key: str) -> None:
        """One turn of the singleton: a batch, the sync gate, then a provisioning pass."""
        if not self._warm:
            # The solver's numeric libraries load lazily: load them before the first batch.
            await run_off_loop(warm_up)
            self._warm = True
        if not self._batched:
            self._batched = await self.batcher.wait()
            if not self._batched:
                return
        if not self.cluster.synced():
            self._log_unsynced()
            await self.clock.sleep(SYNC_POLL)
            return
        self._unsynced_since = None
        self._batched = False
        await self.provision()

    def _log_unsynced(self) -> None:
        now = self.clock.now()
        if self._unsynced_since is None:
            self._unsynced_since = now
        if now - self._unsynced_since >= UNSYNCED_LOG_EVERY and (
            now - self._last_unsynced_log >= UNSYNCED_LOG_EVERY
        ):
            self._last_unsynced_log = now
            log.info(
                "waiting on cluster sync",
                unlaunched=self.cluster.unlaunched_nodeclaims()[:MAX_LOGGED],
            )

    async def provision(self) -> list[str]:
        """Schedule the pending pods and create NodeClaims; returns the created names."""
        laps = Stopwatch()
        batch = await self.gather()
        if batch is None:
            return []
        laps.lap("gather")
        scheduling_id = str(uuid.uuid4())
        metrics.QUEUE_DEPTH.labels(NAME, scheduling_id).set(len(batch.pods))
        started = time.perf_counter()
        metrics.UNFINISHED_WORK.labels(NAME, scheduling_id).set_function(
            lambda: time.perf_counter() - started
        )
        try:
            result, worker = await run_off_loop(self.solve, batch)
        finally:
            metrics.SCHEDULING_DURATION.labels(NAME).observe(time.perf_counter() - started)
            metrics.QUEUE_DEPTH.remove(NAME, scheduling_id)
            metrics.UNFINISHED_WORK.remove(NAME, scheduling_id)
        by_key = {podutil.pod_key(p) for p in batch.pods}
        metrics.UNSCHEDULABLE_PODS.labels(NAME).set(sum(1 for k in result.errors if k in by_key))
        laps.lap("simulate")
        if result.gap is not None:
            metrics.OPTIMALITY_GAP.observe(result.gap)
        metrics.PLAN_COST.set(result.cost)
        metrics.PLAN_LOWER_BOUND.set(max(result.lower_bound, result.best_bound or 0.0))
        log.debug(
            "provisioning plan optimality",
            pods=len(batch.pods),
            cost=round(result.cost, 6),
            lower_bound=round(result.lower_bound, 6),
            optimal=result.optimal,
            gap=None if result.gap is None else round(result.gap, 6),
            exact=result.exact,
        )
        plan = {
            "batch": scheduling_id,
            "pods": len(batch.pods),
            "nodeClaims": len(result.node_claims),
            "cost": round(result.cost, 6),
            "lowerBound": round(max(result.lower_bound, result.best_bound or 0.0), 6),
            "optimal": result.optimal,
        }
        if result.gap is not None:
            plan["gap"] = round(result.gap, 6)
        names = await self.apply(batch, result, plan=plan)
        laps.lap("apply")
        await self._write_buffer_status(batch, result)
        log.debug(
            "provisioning pass timings",
            pods=len(batch.pods),
            nodes=len(batch.snapshot.nodes),
            nodeclaims=len(result.node_claims),
            loop=laps.fields(),
            worker=worker.fields(),
        )
        return names

    async def _write_buffer_status(self, batch: _Batch, result: SchedulingResult) -> None:
        """Each CapacityBuffer's `Provisioning` condition from where this pass put its virtual
        pods (read from the informer now: the write carries the latest resourceVersion)."""
        informer = self.cluster.capacitybuffer_informer
        if informer is None or not batch.snapshot.buffers:
            return
        await write_provisioning(
            self.client,
            buffers=informer.list(),
            result=result,
            real={podutil.pod_key(p) for p in batch.pods},
            now=self.clock.wall(),
        )

    # -- 1 and 2: what to schedule ----------------------------------------------------------------

    def capacity_coming(self, keys: Iterable[str]) -> set[str]:
        """The pods among `keys` whose capacity is on its way: planned onto a NodeClaim that has
        not registered, or nominated to a node of ours that has not registered yet (kube-scheduler
        may have dropped the nomination). They need no new plan and must not hold a batch open."""
        planned = self.cluster.planned_pods()
        ledger, nodes = self.cluster.pod_nominations, self.cluster.node_informer
        return {k for k in keys if k in planned or awaiting_node(k, ledger, nodes)}

    async def gather(self) -> _Batch | None:
        started = time.perf_counter()
        snapshot = self.cluster.snapshot()
        provisionable = self.cluster.provisionable_pods()
        coming = self.capacity_coming([podutil.pod_key(pod) for pod in provisionable])
        candidates = [pod for pod in provisionable if podutil.pod_key(pod) not in coming]
        deleting = self.cluster.pods_on_deleting_nodes(snapshot.nodes)
        # CapacityBuffers keep room even with nothing pending: their virtual pods are added
        # by the input builder, so a pass runs for them alone
        if not candidates and not deleting and not snapshot.buffers:
            return None
        templates = await self.templates()
        well_known = well_known_labels(templates)
        pods: dict[str, JSON] = {}
        ignored = 0
        for pod in candidates:
            try:
                validate_pod(
                    pod, well_known=well_known, pvc=self._pvc, storage_class=self._storage_class
                )
            except PodValidationError as err:
                self._ignore(pod, str(err))
                ignored += 1
                continue
            pods[podutil.pod_key(pod)] = pod
        metrics.IGNORED_PODS.set(ignored)
        for pod in deleting:
            pods.setdefault(podutil.pod_key(pod), pod)
        if not pods and not snapshot.buffers:
            return None
        keys = sorted(pods)
        if keys:
            log.info(
                "found provisionable pod(s)",
                Pods=_names(keys),
                duration=f"{time.perf_counter() - started:.3f}s",
            )
        if not templates:
            log.info("no nodepools found")
            for pod in pods.values():
                self._failed(pod, "no nodepools found")
            return None
        return _Batch(snapshot=snapshot, pods=tuple(pods.values()), templates=tuple(templates))

    def _pvc(self, namespace: str, name: str) -> JSON | None:
        # the informers cluster state keeps: the lookups pod validation and volume topology share
        return self.cluster.pvc_informer.get(f"{namespace}/{name}")

    def _storage_class(self, name: str) -> JSON | None:
        return self.cluster.storageclass_informer.get(name)

    def _ignore(self, pod: JSON, reason: str) -> None:
        log.debug("ignoring pod", Pod=_ref(pod), reason=reason)
        self._failed(pod, f"ignoring pod, {reason}")

    def _failed(self, pod: JSON, reason: str) -> None:
        self.events.publish(
            _with_kind(pod, "Pod", "v1"),
            type=WARNING,
            reason="FailedScheduling",
            message=f"Failed to schedule pod, {reason}",
        )

    async def templates(self) -> list[NodePoolTemplate]:
        """The NodePools pods may go to: Ready, not deleting, not static."""
        out: list[NodePoolTemplate] = []
        for raw in self.cluster.nodepools():
            meta = raw.get("metadata") or {}
            if meta.get("deletionTimestamp") or not is_condition_true(
                raw, conditions.CONDITION_READY
            ):
                continue
            if (raw.get("spec") or {}).get("replicas") is not None:
                continue
            try:
                pool = NodePool.model_validate(raw)
                types = await self.cloud_provider.get_instance_types(pool)
                out.append(NodePoolTemplate.from_nodepool(raw, types))
            except Exception as err:  # one broken NodePool must not stop the others
                log.error("skipping nodepool", NodePool=_ref(raw), error=str(err))
        return out

    # -- 3: simulate (worker thread) -----------------------------------------------------------

    def solve(self, batch: _Batch) -> tuple[SchedulingResult, Stopwatch]:
        """Plan a batch (in a worker thread): the engine's input from the snapshot's objects
        and the batch's pods, then the schedule."""
        laps = Stopwatch()
        try:
            return self._schedule(batch, laps), laps
        finally:
            self.views.prune()

    def _schedule(self, batch: _Batch, laps: Stopwatch) -> SchedulingResult:
        built = build_input(
            batch.snapshot.objects(batch.pods, batch.templates),
            views=self.views,
            preference_policy=self.preference_policy,
            min_values_policy=self.min_values_policy,
            default_spread=self.default_spread,
        )
        for key, reason in sorted(built.errors.items()):
            log.warning("ignoring unreadable pod", Pod=key, error=reason)
        laps.lap("inputs")
        result = schedule(built.input)
        result.errors = built.explain(result.errors)
        laps.lap("schedule")
        # pods left out of the input (a claim or a bound volume not found yet, a spec the
        # scheduler cannot read) are not scheduled in this pass: `apply` reports them on the pod
        result.errors.update(built.errors)
        return result

    # -- 4: act -----------------------------------------------------------------------------------

    async def apply(
        self, batch: _Batch, result: SchedulingResult, *, plan: Mapping[str, Any] | None = None
    ) -> list[str]:
        """Nominate the pods placed on existing nodes and create the new NodeClaims. The API
        calls of both run at once: nominations to a hundred nodes must not hold the launches
        back (each is a round trip, slow on a busy API server). `plan`: the batch-wide fields
        of each NodeClaim's `karpy.sh/provisioning-plan` annotation."""
        by_key = {podutil.pod_key(p): p for p in batch.pods}
        if result.node_claims:
            log.info(
                "computed new nodeclaim(s) to fit pod(s)",
                nodeclaims=len(result.node_claims),
                pods=sum(len(c.pods) for c in result.node_claims),
            )
        placements = self._nominate_existing(batch, result, by_key)
        buffered: list[str] = []
        for key, reason in sorted(result.errors.items()):
            pod = by_key.get(key)
            if pod is not None:
                log.info("could not schedule pod", Pod=_ref(pod), error=reason)
                self._failed(pod, reason)
            elif CAPACITY_BUFFER_POD.search(key):
                buffered.append(f"{key}: {reason}")
        if buffered:
            # a buffer's virtual pods have no object for an event: say it in the log
            log.info("could not keep room for capacity buffer pod(s)", errors=_names(buffered))
        semaphore = asyncio.Semaphore(CREATE_CONCURRENCY)
        # Read once for the batch: each read joins every Node and NodeClaim, and the NodeClaims
        # this batch creates count only once launched, so a read per create saw the same usage.
        usage = self.cluster.all_nodepool_resources()

        async def create(claim: NewNodeClaim) -> str | None:
            async with semaphore:
                return await self.create(claim, by_key, usage=usage, plan=plan)

        async def nominate() -> None:
            if placements:
                await nominate_placements(
                    self.client,
                    self.cluster.pod_informer,
                    placements,
                    ledger=self.cluster.pod_nominations,
                )

        *names, _ = await asyncio.gather(*(create(c) for c in result.node_claims), nominate())
        return [n for n in names if n]

    def _nominate_existing(
        self, batch: _Batch, result: SchedulingResult, by_key: Mapping[str, JSON]
    ) -> dict[str, list[str]]:
        """Record the pods placed on existing nodes (cluster state, `Nominated` events); returns
        the pods to nominate through the API, by registered node name. Pods placed on nodes
        that have not registered are recorded as plans, nominated when the node registers."""
        if not result.existing:
            return {}
        nodes = {n.name: n for n in batch.snapshot.nodes}
        unready = 0
        placed = 0
        placements: dict[str, list[str]] = {}
        for name, views in result.existing.items():
            node = nodes.get(name)
            # a CapacityBuffer's virtual pods take room in the plan, never a nomination (a
            # nominated node is kept from disruption, and the buffer must not keep it)
            keys = [v.key for v in views if v.key in by_key]
            if node is None or not keys:
                continue
            self.cluster.nominate(node.key)
            placed += len(keys)
            if not node.initialized:
                unready += 1
            target = f"node/{node.node_name}" if node.node_name else f"nodeclaim/{name}"
            for key in keys:
                self._nominated(by_key[key], target)
            if node.node_name and node.registered:
                placements.setdefault(node.node_name, []).extend(keys)
            elif node.nodeclaim_name:
                self.cluster.record_plan(node.nodeclaim_name, keys)
        if unready:
            log.info(f"computed {unready} unready node(s) will fit {placed} pod(s)")
        return placements

    def _nominated(self, pod: JSON, target: str) -> None:
        self.events.publish(
            _with_kind(pod, "Pod", "v1"),
            type=NORMAL,
            reason="Nominated",
            message=f"Pod should schedule on: {target}",
        )

    async def create(
        self,
        claim: NewNodeClaim,
        pods: Mapping[str, JSON],
        *,
        usage: Mapping[str, ResourceMap] | None = None,
        plan: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Create one NodeClaim, unless its NodePool is gone or already over its limits (by
        `usage`, the NodePools' resources read for the batch, or read now); with `plan`, it
        records the plan that chose it (`karpy.sh/provisioning-plan`)."""
        nodepool = self.cluster.nodepool_informer.get(claim.nodepool)
        if nodepool is None or (nodepool.get("metadata") or {}).get("deletionTimestamp"):
            log.info("nodepool is gone; not creating nodeclaim", NodePool={"name": claim.nodepool})
            return None
        used = (
            self.cluster.nodepool_resources(claim.nodepool)
            if usage is None
            else usage.get(claim.nodepool, {})
        )
        exceeded = limits_exceeded((nodepool.get("spec") or {}).get("limits"), used)
        if exceeded:
            log.error(
                "failed launching nodeclaim",
                NodePool={"name": claim.nodepool},
                error=f"nodepool {claim.nodepool} has exceeded its limits: {exceeded}",
            )
            self.events.publish(
                _with_kind(nodepool, "NodePool", f"{labels.GROUP}/v1"),
                type=WARNING,
                reason="NodePoolLimitExceeded",
                message=f"NodePool {claim.nodepool} has exceeded its limits: {exceeded}",
            )
            for view in claim.pods:
                pod = pods.get(view.key)
                if pod is not None:
                    self._failed(pod, f"nodepool {claim.nodepool} has exceeded its limits")
            return None
        body = nodeclaim_for(claim, nodepool)
        if plan is not None:
            body["metadata"]["annotations"][ANNOTATION_PLAN] = plan_annotation(claim, plan)
        try:
            created = await self.client.create(NODECLAIMS, body)
        except OutcomeUnknownError as err:
            # Never repeated blindly: the next pass sees the NodeClaim if it was created.
            log.error(
                "failed launching nodeclaim", NodePool={"name": claim.nodepool}, error=str(err)
            )
            return None
        except KubeError as err:
            log.error(
                "failed launching nodeclaim", NodePool={"name": claim.nodepool}, error=str(err)
            )
            return None
        self.cluster.update_nodeclaim(created)
        name = str((created.get("metadata") or {}).get("name") or "")
        self.cluster.record_plan(name, [v.key for v in claim.pods if v.key in pods])
        metrics.NODECLAIMS_CREATED.labels(
            "provisioning", claim.nodepool, str(claim.min_values_relaxed).lower()
        ).inc()
        types = [t.name for t in claim.instance_types]
        shown = ", ".join(types[:5]) + (f" and {len(types) - 5} other(s)" if len(types) > 5 else "")
        log.info(
            "created nodeclaim",
            NodePool={"name": claim.nodepool},
            NodeClaim={"name": name},
            requests=format_resources(claim.requests),
            **{"instance-types": shown},
        )
        for view in claim.pods:
            pod = pods.get(view.key)
            if pod is not None:
                self._nominated(pod, f"nodeclaim/{name}")
        return name


class Stopwatch:
    """Wall and CPU time (of the calling thread) per step: a worker thread's CPU time far below
    its wall time means it waited for the GIL or for a core."""

    __slots__ = ("_cpu", "_wall", "laps")

    def __init__(self) -> None:
        self.laps: list[tuple[str, float, float]] = []
        self._wall = time.perf_counter()
        self._cpu = time.thread_time()

    def lap(self, name: str) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        self.laps.append((name, wall - self._wall, cpu - self._cpu))
        self._wall, self._cpu = wall, cpu

    def fields(self) -> dict[str, str]:
        return {name: f"{wall:.3f}s wall, {cpu:.3f}s cpu" for name, wall, cpu in self.laps}


def _with_kind(obj: JSON, kind: str, api_version: str) -> JSON:
    """Informer objects may lack apiVersion/kind; events need them in involvedObject."""
    if obj.get("kind") and obj.get("apiVersion"):
        return obj
    return {**obj, "kind": kind, "apiVersion": api_version}
