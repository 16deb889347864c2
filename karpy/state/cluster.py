"""The cluster as the provisioner and the disruption loop see it.

`Cluster` is a view over the shared informers (Nodes, NodeClaims, Pods, DaemonSets, NodePools,
Namespaces, and the claims, volumes and StorageClasses that pin pods to zones) plus the few
facts only karpy knows: which nodes a disruption command is about to delete, which nodes pods
were just nominated to, and NodeClaims created a moment ago that the watch has not delivered
yet. Nodes are joined to NodeClaims by providerID on demand (`karpy.state.inputs.join_nodes`);
pods come from the pod informer's node-name index. Every read builds fresh frozen `StateNode`s,
so what a caller holds never changes under it and can be handed to a worker thread.

`synced()` is Karpenter's gate: false until the caches have listed, and false while any NodeClaim
has not been launched (no providerID). A NodeClaim that was created but not launched is not a
node the scheduler can count on, so the provisioner waits for it instead of launching again.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from karpy.apis.descriptors import (
    CAPACITYBUFFERS,
    NODECLAIMS,
    NODEOVERLAYS,
    NODEPOOLS,
    SCHEDULINGCONFIGS,
)
from karpy.apis.v1 import conditions, labels
from karpy.apis.v1.schedulingconfig import DEFAULT_NAME
from karpy.kube.cache import Cache
from karpy.kube.clock import Clock, RealClock
from karpy.kube.informer import HandlerFuncs, Informer
from karpy.kube.metrics import REGISTRY
from karpy.kube.resources import (
    DAEMONSETS,
    LIMITRANGES,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODS,
    PODTEMPLATES,
    STORAGECLASSES,
)
from karpy.kube.store import INDEX_NODE_NAME, INDEX_PROVIDER_ID, IndexFunc, field_indexer
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.resources import ResourceMap
from karpy.state import pods as podutil
from karpy.state.inputs import (
    NODES_RESOURCE,
    ClusterObjects,
    NodeClassKey,
    daemonset_pod,
    join_nodes,
    node_key,
    nodepool_nodeclass,
    nodepool_usage,
    parameters,
)
from karpy.state.nodepoolhealth import NodePoolHealth
from karpy.state.statenode import StateNode, claim_condition

__all__ = ["DEFAULT_NOMINATION_WINDOW", "Cluster", "ClusterSnapshot", "nomination_window"]

JSON = dict[str, Any]
DEFAULT_NOMINATION_WINDOW = 20.0
PENDING_CLAIM_TTL = 15.0
"""How long a NodeClaim created by karpy but never seen by the watch is still tracked (the
watch may lag; past this it was deleted before the watch saw it, Karpenter's issue #3176)."""
CONSOLIDATION_STATE_REFRESH = 300.0
INDEX_NOMINATED = "status.nominatedNodeName"
_BY_NOMINATED: IndexFunc = field_indexer("status", "nominatedNodeName")
_BY_PROVIDER_ID: IndexFunc = field_indexer("status", "providerID")


def nomination_window(batch_max_duration: float) -> float:
    """Karpenter's nomination window: max(2 x BATCH_MAX_DURATION, 10 s)."""
    return max(2.0 * batch_max_duration, 10.0)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything a simulation reads, captured at one moment."""

    nodes: tuple[StateNode, ...]
    daemonsets: tuple[JSON, ...]
    namespace_labels: Mapping[str, Mapping[str, str]]
    nodepool_resources: Mapping[str, ResourceMap] = field(default_factory=dict)
    claims: tuple[JSON, ...] = ()
    volumes: tuple[JSON, ...] = ()
    storage_classes: tuple[JSON, ...] = ()
    limit_ranges: tuple[JSON, ...] = ()
    """LimitRanges: their container defaults are the requests of DaemonSet containers without."""
    configs: tuple[JSON, ...] = ()
    """SchedulingConfigs (karpy's extension), and each NodePool's NodeClass they match on."""
    nodeclasses: Mapping[str, NodeClassKey | None] = field(default_factory=dict)
    overlays: tuple[JSON, ...] = ()
    """NodeOverlays (only with the NodeOverlay feature gate)."""
    buffers: tuple[JSON, ...] = ()
    """CapacityBuffers (only with the CapacityBuffer feature gate), and their PodTemplates."""
    pod_templates: Mapping[tuple[str, str], JSON] = field(default_factory=dict)

    def active_nodes(self) -> list[StateNode]:
        """Nodes not marked for deletion: the ones new pods can still go to."""
        return [n for n in self.nodes if not n.marked_for_deletion]

    def objects(
        self, pending: Iterable[JSON], templates: Iterable[NodePoolTemplate]
    ) -> ClusterObjects:
        """These objects plus the pods to place, as `karpy.state.inputs.build_input` takes them."""
        return ClusterObjects(
            pending=tuple(pending),
            nodes=self.nodes,
            daemonsets=self.daemonsets,
            claims=self.claims,
            volumes=self.volumes,
            storage_classes=self.storage_classes,
            limit_ranges=self.limit_ranges,
            namespaces=self.namespace_labels,
            templates=tuple(templates),
            configs=self.configs,
            nodeclasses=self.nodeclasses,
            overlays=self.overlays,
            buffers=self.buffers,
            pod_templates=self.pod_templates,
        )


@dataclass(slots=True)
class _PendingClaim:
    obj: JSON
    added: float


def _rv(obj: Mapping[str, Any] | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _provider_id_of_claim(claim: Mapping[str, Any]) -> str:
    return str((claim.get("status") or {}).get("providerID") or "")


def _coming(claim: Mapping[str, Any]) -> bool:
    """Neither registered nor deleting: pods planned onto it wait for it."""
    return (
        not (claim.get("metadata") or {}).get("deletionTimestamp")
        and (claim_condition(claim, conditions.NODECLAIM_REGISTERED) or {}).get("status")
        != conditions.STATUS_TRUE
    )


class Cluster:
    """In-memory model of the cluster, fed by the shared informers of `cache`."""

    def __init__(
        self,
        cache: Cache,
        *,
        clock: Clock | None = None,
        nomination_window: float = DEFAULT_NOMINATION_WINDOW,
        node_overlays: bool = False,
        capacity_buffers: bool = False,
    ) -> None:
        self.cache = cache
        self.clock = clock or RealClock()
        self.nomination_window = nomination_window
        cache.add_indexer(NODECLAIMS, INDEX_PROVIDER_ID, _BY_PROVIDER_ID)
        cache.add_indexer(PODS, INDEX_NOMINATED, _BY_NOMINATED)
        self.node_informer: Informer = cache.informer(NODES)
        self.nodeclaim_informer: Informer = cache.informer(NODECLAIMS)
        self.pod_informer: Informer = cache.informer(PODS)
        self.daemonset_informer: Informer = cache.informer(DAEMONSETS)
        self.nodepool_informer: Informer = cache.informer(NODEPOOLS)
        self.namespace_informer: Informer = cache.informer(NAMESPACES)
        self.pvc_informer: Informer = cache.informer(PERSISTENTVOLUMECLAIMS)
        self.pv_informer: Informer = cache.informer(PERSISTENTVOLUMES)
        self.storageclass_informer: Informer = cache.informer(STORAGECLASSES)
        self.limitrange_informer: Informer = cache.informer(LIMITRANGES)
        self.schedulingconfig_informer: Informer = cache.informer(SCHEDULINGCONFIGS)
        # Only with the NodeOverlay gate: without it the CRD need not be installed.
        self.nodeoverlay_informer: Informer | None = (
            cache.informer(NODEOVERLAYS) if node_overlays else None
        )
        # Only with the CapacityBuffer gate: the CRD is Cluster Autoscaler's, often absent.
        self.capacitybuffer_informer: Informer | None = (
            cache.informer(CAPACITYBUFFERS) if capacity_buffers else None
        )
        self.podtemplate_informer: Informer | None = (
            cache.informer(PODTEMPLATES) if capacity_buffers else None
        )
        self._pending: dict[str, _PendingClaim] = {}
        self._planned: dict[str, dict[str, None]] = {}
        self._marked: set[str] = set()
        self._nominated: dict[str, float] = {}
        self._changed_at = self.clock.now()
        self.nodepool_health = NodePoolHealth()
        """Recent launch/registration outcomes per NodePool (the lifecycle records them)."""
        self.pod_nominations: dict[str, str] = {}
        """Pods karpy itself nominated (`namespace/name` -> node name). Only these may be
        withdrawn when they stop holding: kube-scheduler's own (preemption) nominations are
        never touched. In memory only: after a restart karpy withdraws none of its earlier
        nominations except those to nodes that are gone."""
        self.nodeclaim_informer.add_handler(
            HandlerFuncs(
                add=self._on_claim, update=lambda _o, n: self._on_claim(n), delete=self._on_gone
            )
        )
        self.node_informer.add_handler(
            HandlerFuncs(add=self._on_change, update=self._on_node_update, delete=self._on_change)
        )
        _COLLECTOR.clusters.add(self)

    # -- informer events --------------------------------------------------------------------------

    def _on_claim(self, claim: JSON) -> None:
        name = _name(claim)
        pending = self._pending.get(name)
        if pending is not None and _rv(claim) >= _rv(pending.obj):
            del self._pending[name]
        self._changed_at = self.clock.now()

    def _on_gone(self, obj: JSON) -> None:
        self._pending.pop(_name(obj), None)
        self._planned.pop(_name(obj), None)
        self._changed_at = self.clock.now()

    def _on_change(self, obj: JSON) -> None:
        self._changed_at = self.clock.now()

    def _on_node_update(self, old: JSON, new: JSON) -> None:
        old_labels = (old.get("metadata") or {}).get("labels") or {}
        new_labels = (new.get("metadata") or {}).get("labels") or {}
        if old_labels.get(labels.LABEL_NODE_INITIALIZED) != new_labels.get(
            labels.LABEL_NODE_INITIALIZED
        ) or bool((old.get("metadata") or {}).get("deletionTimestamp")) != bool(
            (new.get("metadata") or {}).get("deletionTimestamp")
        ):
            self._changed_at = self.clock.now()

    # -- what karpy itself knows ------------------------------------------------------------------

    def update_nodeclaim(self, claim: JSON) -> None:
        """Track a NodeClaim karpy just wrote, before the watch delivers it (so a NodeClaim
        created but not launched holds provisioning back at once)."""
        name = _name(claim)
        if not name:
            return
        current = self.nodeclaim_informer.get(name)
        if current is not None and _rv(current) >= _rv(claim):
            return
        self._pending[name] = _PendingClaim(obj=claim, added=self.clock.now())
        self._changed_at = self.clock.now()

    def forget_nodeclaim(self, name: str) -> None:
        """Drop a NodeClaim karpy tracked by itself (it was deleted, or never created)."""
        self._pending.pop(name, None)

    def record_plan(self, nodeclaim: str, pod_keys: Iterable[str]) -> None:
        """Remember which pods the provisioner planned onto a NodeClaim (`namespace/name`),
        so that they can be nominated to its Node when it registers."""
        planned = self._planned.setdefault(nodeclaim, {})
        for key in pod_keys:
            planned[key] = None

    def planned_pods(self) -> set[str]:
        """Pods planned onto NodeClaims that are still coming (neither registered nor
        deleting): capacity is on its way for them, so they need no new plan. Once the Node
        registers, its planned pods are nominated to it and kube-scheduler takes over."""
        claims = {_name(c): c for c in self.nodeclaims()}
        coming = {name for name, c in claims.items() if _coming(c)}
        for name in [n for n in self._planned if n not in claims]:
            if self.nodeclaim_informer.has_synced():
                del self._planned[name]
        return {key for name, keys in self._planned.items() if name in coming for key in keys}

    def take_plan(self, nodeclaim: str) -> list[str]:
        """The pods planned onto a NodeClaim, forgotten once taken."""
        return list(self._planned.pop(nodeclaim, {}))

    def mark_for_deletion(self, *keys: str) -> None:
        """A disruption command is deleting these nodes (by `StateNode.key`)."""
        self._marked.update(keys)
        self._changed_at = self.clock.now()

    def unmark_for_deletion(self, *keys: str) -> None:
        self._marked.difference_update(keys)
        self._changed_at = self.clock.now()

    def _nomination_window(self) -> float:
        """The window, from the `default` SchedulingConfig's batchMaxDuration when it sets one
        (it overrides BATCH_MAX_DURATION live), else as configured."""
        default = self.schedulingconfig_informer.get(DEFAULT_NAME)
        batch_max = parameters([default]).batch_max if default is not None else None
        if batch_max is None:
            return self.nomination_window
        return nomination_window(batch_max.total_seconds())

    def nominate(self, *keys: str) -> None:
        """Pods were planned onto these nodes; keep disruption off them for the window."""
        until = self.clock.now() + self._nomination_window()
        for key in keys:
            self._nominated[key] = until

    def is_nominated(self, key: str) -> bool:
        until = self._nominated.get(key)
        if until is None:
            return False
        if until <= self.clock.now():
            del self._nominated[key]
            return False
        return True

    def consolidation_state(self) -> float:
        """When the set of nodes last changed (forced fresh every 5 minutes)."""
        now = self.clock.now()
        if now - self._changed_at > CONSOLIDATION_STATE_REFRESH:
            self._changed_at = now
        return self._changed_at

    # -- reading ----------------------------------------------------------------------------------

    def nodeclaims(self) -> list[JSON]:
        """Every NodeClaim: the cache's, plus ones karpy created that the watch has not shown."""
        self._expire_pending()
        claims = {_name(c): c for c in self.nodeclaim_informer.list()}
        for name, pending in self._pending.items():
            claims[name] = pending.obj
        return list(claims.values())

    def _expire_pending(self) -> None:
        now = self.clock.now()
        for name in [
            n
            for n, p in self._pending.items()
            if now - p.added > PENDING_CLAIM_TTL and self.nodeclaim_informer.get(n) is None
        ]:
            del self._pending[name]

    def _informers(self) -> tuple[Informer, ...]:
        buffers = tuple(
            i for i in (self.capacitybuffer_informer, self.podtemplate_informer) if i is not None
        )
        return (
            *buffers,
            self.node_informer,
            self.nodeclaim_informer,
            self.pod_informer,
            self.daemonset_informer,
            self.nodepool_informer,
            self.pvc_informer,
            self.pv_informer,
            self.storageclass_informer,
            self.limitrange_informer,
        )

    def synced(self) -> bool:
        """The caches have listed and every NodeClaim has been launched (has a providerID)."""
        if not all(i.has_synced() for i in self._informers()):
            return False
        return all(_provider_id_of_claim(c) for c in self.nodeclaims())

    def unlaunched_nodeclaims(self) -> list[str]:
        """Names of NodeClaims without a providerID (what `synced()` waits for)."""
        return sorted(_name(c) for c in self.nodeclaims() if not _provider_id_of_claim(c))

    def _pods_on(self, node_name: str) -> tuple[JSON, ...]:
        return tuple(
            p
            for p in self.pod_informer.by_index(INDEX_NODE_NAME, node_name)
            if not podutil.is_terminal(p)
        )

    def _planned_on(self, node: JSON | None, claim: JSON | None) -> tuple[JSON, ...]:
        """Unbound pods on their way to this node: planned onto its NodeClaim while it is still
        coming (the pods `planned_pods()` keeps out of batches), or nominated to its Node."""
        keys: list[str] = []
        if claim is not None and _coming(claim):
            keys.extend(self._planned.get(_name(claim), ()))
        if node is not None:
            keys.extend(
                podutil.pod_key(p) for p in self.pod_informer.by_index(INDEX_NOMINATED, _name(node))
            )
        out: dict[str, JSON] = {}
        for key in keys:
            pod = self.pod_informer.get(key)
            if pod is not None and not podutil.node_name(pod) and podutil.is_active(pod):
                out[key] = pod
        return tuple(out.values())

    def _build(self, key: str, node: JSON | None, claim: JSON | None) -> StateNode:
        pods = self._pods_on(_name(node)) if node is not None else ()
        return StateNode(
            key=key,
            node=node,
            nodeclaim=claim,
            pods=pods,
            planned=self._planned_on(node, claim),
            marked=key in self._marked,
            nominated=self.is_nominated(key),
        )

    def nodes(self) -> list[StateNode]:
        """Every node: registered Nodes (joined to their NodeClaim) and launched NodeClaims
        whose Node has not registered yet. Unlaunched NodeClaims are not nodes."""
        out = join_nodes(
            nodes=self.node_informer.list(), nodeclaims=self.nodeclaims(), build=self._build
        )
        self._marked &= {n.key for n in out}
        return out

    def __iter__(self) -> Iterator[StateNode]:
        return iter(self.nodes())

    def node(self, key: str) -> StateNode | None:
        """The node with this providerID (or name, for nodes without one)."""
        return next((n for n in self.nodes() if n.key == key), None)

    def node_for_nodeclaim(self, name: str) -> StateNode | None:
        return next((n for n in self.nodes() if n.nodeclaim_name == name), None)

    def node_for_node_name(self, name: str) -> StateNode | None:
        node = self.node_informer.get(name)
        if node is None:
            return None
        key = node_key(node)
        claims = self.nodeclaim_informer.by_index(INDEX_PROVIDER_ID, key)
        return self._build(key, node, claims[0] if claims else None)

    def nodepool_resources(self, nodepool: str) -> ResourceMap:
        """Capacity of the NodePool's nodes, plus `nodes` (their count)."""
        return self.all_nodepool_resources().get(nodepool, {NODES_RESOURCE: 0})

    def all_nodepool_resources(
        self, nodes: Iterable[StateNode] | None = None
    ) -> dict[str, ResourceMap]:
        return nodepool_usage(self.nodes() if nodes is None else nodes)

    def nodepools(self) -> list[JSON]:
        return self.nodepool_informer.list()

    def namespace_labels(self) -> dict[str, dict[str, str]]:
        return {
            _name(ns): dict((ns.get("metadata") or {}).get("labels") or {})
            for ns in self.namespace_informer.list()
        }

    def daemonset_pods(self) -> list[JSON]:
        """One pod per DaemonSet, as its template would make it: the overhead every new node of
        a matching NodePool carries."""
        return [daemonset_pod(ds) for ds in self.daemonset_informer.list()]

    def provisionable_pods(self) -> list[JSON]:
        """Pods kube-scheduler could not place and karpy may provision for."""
        return [p for p in self.pod_informer.list() if podutil.is_provisionable(p)]

    def pods_on_deleting_nodes(self, nodes: Iterable[StateNode] | None = None) -> list[JSON]:
        """Pods of nodes being deleted that will need a place once evicted."""
        out: list[JSON] = []
        for n in self.nodes() if nodes is None else nodes:
            if n.marked_for_deletion:
                out.extend(n.reschedulable_pods())
        return out

    def snapshot(self) -> ClusterSnapshot:
        nodes = tuple(self.nodes())
        return ClusterSnapshot(
            nodes=nodes,
            daemonsets=tuple(self.daemonset_informer.list()),
            namespace_labels=self.namespace_labels(),
            nodepool_resources=self.all_nodepool_resources(nodes),
            claims=tuple(self.pvc_informer.list()),
            volumes=tuple(self.pv_informer.list()),
            storage_classes=tuple(self.storageclass_informer.list()),
            limit_ranges=tuple(self.limitrange_informer.list()),
            configs=tuple(self.schedulingconfig_informer.list()),
            nodeclasses={_name(p): nodepool_nodeclass(p) for p in self.nodepool_informer.list()},
            overlays=tuple(self.nodeoverlay_informer.list()) if self.nodeoverlay_informer else (),
            buffers=tuple(self.capacitybuffer_informer.list())
            if self.capacitybuffer_informer
            else (),
            pod_templates=self.pod_templates(),
        )

    def pod_templates(self) -> dict[tuple[str, str], JSON]:
        """PodTemplates by (namespace, name) (only with the CapacityBuffer gate)."""
        if self.podtemplate_informer is None:
            return {}
        return {
            (str((t.get("metadata") or {}).get("namespace") or ""), _name(t)): t
            for t in self.podtemplate_informer.list()
        }


class _StateCollector(Collector):
    """`karpenter_cluster_state_node_count`, `_synced` and `_unsynced_time_seconds` (since
    the first scrape that found it unsynced), computed at scrape time."""

    def __init__(self) -> None:
        self.clusters: weakref.WeakSet[Cluster] = weakref.WeakSet()
        self.unsynced_since: float | None = None

    def collect(self) -> Iterator[Metric]:
        count = GaugeMetricFamily(
            "karpenter_cluster_state_node_count", "Current count of nodes in cluster state"
        )
        synced = GaugeMetricFamily(
            "karpenter_cluster_state_synced",
            "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that "
            "nodeclaims and nodes that are stored in the APIServer have the same representation "
            "as Karpenter's cluster state",
        )
        unsynced = GaugeMetricFamily(
            "karpenter_cluster_state_unsynced_time_seconds",
            "The time for which cluster state is not synced",
        )
        clusters = list(self.clusters)
        if clusters:
            cluster = clusters[-1]
            count.add_metric([], len(cluster.nodes()))
            is_synced = cluster.synced()
            synced.add_metric([], 1.0 if is_synced else 0.0)
            now = time.monotonic()
            if is_synced:
                self.unsynced_since = None
            elif self.unsynced_since is None:
                self.unsynced_since = now
            since = self.unsynced_since
            unsynced.add_metric([], 0.0 if since is None else now - since)
        yield count
        yield synced
        yield unsynced

    def describe(self) -> Iterator[Metric]:
        return iter(())


_COLLECTOR = _StateCollector()
REGISTRY.register(_COLLECTOR)
