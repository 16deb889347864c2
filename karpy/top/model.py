"""What `karpy top` shows, without any UI: the fleet's objects as the watches deliver them, one
row per node, totals per NodePool and for the cluster, filters and sorts.

`--once` and the Textual app both read it, so a script and a person see the same figures. The
rows are the controller's own join of Nodes and NodeClaims (`karpy.state.inputs.state_nodes`):
a launched NodeClaim whose Node has not registered yet is a row too (`Launching`).

Prices: each node's offering (instance type, capacity type, zone labels, Karpenter's labels, so
a Karpenter cluster works too) in karpy's catalogues, kwok's and the shipped EC2 snapshot
(`PriceBook`). A NodePool's $/h is karpy's own `status.cost` (NodeOverlay prices included)
when the NodePool has one and all of its nodes are shown, else the sum of its rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from karpy.apis.duration import DurationError, parse_duration
from karpy.apis.objects import parse_time
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
    TAINT_DISRUPTED_KEY,
)
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.resources import ResourceMap, pod_requests, sum_requests
from karpy.scheduling.selectors import LabelSelector, SelectorError
from karpy.state import StateNode
from karpy.state.inputs import state_nodes
from karpy.state.statenode import claim_condition

__all__ = [
    "ADDED",
    "DELETED",
    "EXPIRING_WITHIN",
    "HOURS_PER_MONTH",
    "MODIFIED",
    "SORTS",
    "ClusterTotal",
    "Filter",
    "Fleet",
    "FleetView",
    "NodeRow",
    "PoolTotal",
    "PriceBook",
    "bar",
    "build_view",
    "parse_selector",
]

JSON = dict[str, Any]

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"

HOURS_PER_MONTH: Final = 730.0
"""Hours in an average month (8,760 / 12), as cloud price pages count them."""

EXPIRING_WITHIN: Final = timedelta(hours=24)
"""A node whose NodeClaim's `expireAfter` ends within this is shown `expiring`."""

PODS: Final = "pods"
NODES: Final = "nodes"
NODECLAIMS: Final = "nodeclaims"
NODEPOOLS: Final = "nodepools"


# -- the objects ----------------------------------------------------------------------------------


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


class Fleet:
    """The watched objects, kind plural -> key -> object, changed one watch event at a time.

    `version` counts changes (a view is rebuilt only when it moved); `pods_version` counts
    changes to pods, NodePools and what the lower bound reads besides nodes."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, JSON]] = {}
        self.version = 0
        self.pods_version = 0
        self._requests: dict[str, tuple[JSON, ResourceMap]] = {}

    def copy(self) -> Fleet:
        """A fleet of the same objects that later events do not change (the parsed requests
        stay shared), for building a view in another thread."""
        frozen = Fleet()
        frozen.objects = {kind: dict(items) for kind, items in self.objects.items()}
        frozen.version, frozen.pods_version = self.version, self.pods_version
        frozen._requests = self._requests
        return frozen

    def pod_requests(self, pod: JSON) -> ResourceMap:
        """A pod's requests, parsed once per version of the pod (a view of 40,000 pods
        otherwise spends most of its time parsing quantities again)."""
        key = _key(pod)
        cached = self._requests.get(key)
        if cached is not None and cached[0] is pod:
            return cached[1]
        requests = pod_requests(pod.get("spec") or {})
        self._requests[key] = (pod, requests)
        return requests

    def _changed(self, kind: str) -> None:
        self.version += 1
        if kind not in (NODES, NODECLAIMS):
            self.pods_version += 1

    def apply(self, kind: str, event: str, obj: JSON) -> None:
        """One watch event (`ADDED`, `MODIFIED` or `DELETED`) of a `kind` object."""
        items = self.objects.setdefault(kind, {})
        if event == DELETED:
            if items.pop(_key(obj), None) is None:
                return
            self._requests.pop(_key(obj), None)
        else:
            items[_key(obj)] = obj
        self._changed(kind)

    def replace(self, kind: str, objects: Iterable[JSON]) -> None:
        """Every object of `kind` at once (a list)."""
        self.objects[kind] = {_key(o): o for o in objects}
        if kind == PODS:
            self._requests.clear()
        self._changed(kind)

    def listed(self, kinds: Iterable[str] = ()) -> dict[str, list[JSON]]:
        """Kind plural -> its objects; `kinds` that were never seen are listed empty."""
        out = {k: list(v.values()) for k, v in self.objects.items()}
        for kind in kinds:
            out.setdefault(kind, [])
        return out

    def items(self, kind: str) -> list[JSON]:
        return list(self.objects.get(kind, {}).values())

    def state_nodes(self) -> list[StateNode]:
        """The controller's join of Nodes, NodeClaims and the pods bound to them."""
        return state_nodes(
            nodes=self.items(NODES), nodeclaims=self.items(NODECLAIMS), pods=self.items(PODS)
        )

    def view(
        self,
        *,
        prices: PriceBook,
        now: datetime,
        filter: Filter | None = None,
        sort: str = "name",
        reverse: bool = False,
        lower_bound: float | None = None,
    ) -> FleetView:
        return build_view(
            self.state_nodes(),
            nodepools=self.items(NODEPOOLS),
            prices=prices,
            now=now,
            filter=filter,
            sort=sort,
            reverse=reverse,
            lower_bound=lower_bound,
            requests=self.pod_requests,
        )

    def nodepool_names(self) -> list[str]:
        """NodePools by their objects and by the nodes' labels (a Karpenter cluster's too)."""
        names = {_key(p) for p in self.items(NODEPOOLS)}
        for kind in (NODES, NODECLAIMS):
            for o in self.items(kind):
                name = ((o.get("metadata") or {}).get("labels") or {}).get(LABEL_NODEPOOL)
                if name:
                    names.add(str(name))
        return sorted(names)

    def zones(self) -> set[str]:
        """Zones named by the nodes' and NodeClaims' labels."""
        return {
            str(((o.get("metadata") or {}).get("labels") or {}).get(LABEL_TOPOLOGY_ZONE) or "")
            for kind in (NODES, NODECLAIMS)
            for o in self.items(kind)
        } - {""}

    def instance_types(self) -> set[str]:
        """Instance types named by the nodes' and NodeClaims' labels."""
        return {
            str(((o.get("metadata") or {}).get("labels") or {}).get(LABEL_INSTANCE_TYPE) or "")
            for kind in (NODES, NODECLAIMS)
            for o in self.items(kind)
        } - {""}


# -- prices ---------------------------------------------------------------------------------------


class PriceBook:
    """Hourly prices by (instance type, capacity type, zone). A zone the catalogue does not
    list (another region's, say) falls back to the type's cheapest zone for that capacity
    type, and the row says it is an estimate."""

    def __init__(self, types: Iterable[InstanceType] = ()) -> None:
        self._exact: dict[tuple[str, str, str], float] = {}
        self._any_zone: dict[tuple[str, str], float] = {}
        self.add(types)

    def add(self, types: Iterable[InstanceType]) -> None:
        for it in types:
            for o in it.offerings:
                self._exact[(it.name, o.capacity_type, o.zone)] = float(o.price)
                prior = self._any_zone.get((it.name, o.capacity_type))
                if prior is None or o.price < prior:
                    self._any_zone[(it.name, o.capacity_type)] = float(o.price)

    def knows(self, instance_type: str) -> bool:
        return any(name == instance_type for name, _ in self._any_zone)

    def price(
        self, instance_type: str | None, capacity_type: str | None, zone: str | None
    ) -> tuple[float | None, bool]:
        """(price, exact): None when the type or capacity type is unknown."""
        if not instance_type or not capacity_type:
            return None, False
        exact = self._exact.get((instance_type, capacity_type, zone or ""))
        if exact is not None:
            return exact, True
        return self._any_zone.get((instance_type, capacity_type)), False


# -- selectors ------------------------------------------------------------------------------------

_TERM = re.compile(
    r"""\s*(?:
        (?P<not>!)\s*(?P<absent>[^\s,!=()]+)
      | (?P<setkey>[^\s,!=()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)
      | (?P<key>[^\s,!=()]+)\s*(?P<eq>==|=|!=)\s*(?P<value>[^\s,!=()]*)
      | (?P<exists>[^\s,!=()]+)
    )\s*(?:,|$)""",
    re.VERBOSE,
)


def parse_selector(text: str) -> LabelSelector:
    """A label selector in kubectl's syntax (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).
    Raises `SelectorError` naming the part it cannot read."""
    exprs: list[tuple[str, str, tuple[str, ...]]] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _TERM.match(text, position)
        if match is None or match.end() == position:
            raise SelectorError(
                f"label selector {text!r}: cannot read {text[position:]!r} "
                "(write key=value, key!=value, key in (a,b), key notin (a,b), key or !key)"
            )
        position = match.end()
        if match["absent"]:
            exprs.append((match["absent"], "DoesNotExist", ()))
        elif match["setkey"]:
            values = tuple(sorted(v.strip() for v in match["values"].split(",") if v.strip()))
            if not values:
                raise SelectorError(f"label selector {text!r}: {match['setkey']} needs values")
            exprs.append((match["setkey"], "In" if match["op"] == "in" else "NotIn", values))
        elif match["key"]:
            op = "NotIn" if match["eq"] == "!=" else "In"
            exprs.append((match["key"], op, (match["value"],)))
        else:
            exprs.append((match["exists"], "Exists", ()))
    return LabelSelector(tuple(sorted(set(exprs))))


# -- rows -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One node (or a NodeClaim whose Node has not registered)."""

    key: str
    """Unique among rows: the providerID, else the name (two rows may share a name: a
    terminating NodeClaim and a new Node that reuses its host name)."""
    name: str
    nodeclaim: str | None
    nodepool: str | None
    instance_type: str | None
    capacity_type: str | None
    zone: str | None
    price: float | None
    price_exact: bool
    cpu_requested: int
    """Millicores requested by the pods bound to the node (DaemonSet pods included)."""
    cpu_allocatable: int
    memory_requested: int
    """Bytes."""
    memory_allocatable: int
    pods: int
    created: datetime | None
    states: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def cpu_utilisation(self) -> float:
        return self.cpu_requested / self.cpu_allocatable if self.cpu_allocatable else 0.0

    @property
    def memory_utilisation(self) -> float:
        if not self.memory_allocatable:
            return 0.0
        return self.memory_requested / self.memory_allocatable

    @property
    def utilisation(self) -> float:
        """The larger of the CPU and memory fractions: what limits packing more pods."""
        return max(self.cpu_utilisation, self.memory_utilisation)

    def age(self, now: datetime) -> timedelta | None:
        return None if self.created is None else now - self.created

    def to_dict(self, now: datetime) -> JSON:
        age = self.age(now)
        return {
            "name": self.name,
            "nodeClaim": self.nodeclaim,
            "nodePool": self.nodepool,
            "instanceType": self.instance_type,
            "capacityType": self.capacity_type,
            "zone": self.zone,
            "pricePerHour": None if self.price is None else round(self.price, 6),
            "priceExact": self.price_exact,
            "cpu": {
                "requested": _cores(self.cpu_requested),
                "allocatable": _cores(self.cpu_allocatable),
                "utilisation": round(self.cpu_utilisation, 4),
            },
            "memory": {
                "requestedBytes": self.memory_requested,
                "allocatableBytes": self.memory_allocatable,
                "utilisation": round(self.memory_utilisation, 4),
            },
            "pods": self.pods,
            "ageSeconds": None if age is None else int(age.total_seconds()),
            "states": list(self.states),
        }


def _cores(millis: int) -> float:
    return round(millis / 1000, 3)


def _expiry(claim: Mapping[str, Any] | None) -> datetime | None:
    if claim is None:
        return None
    raw = (claim.get("spec") or {}).get("expireAfter")
    created = parse_time((claim.get("metadata") or {}).get("creationTimestamp"))
    if not raw or raw == "Never" or created is None:
        return None
    try:
        return created + parse_duration(str(raw))
    except DurationError:
        return None


def _is_true(obj: Mapping[str, Any] | None, type_: str) -> bool:
    condition = claim_condition(obj, type_)
    return condition is not None and condition.get("status") == cond.STATUS_TRUE


def _states(node: StateNode, now: datetime) -> tuple[str, ...]:
    if node.node is None or not node.registered:
        states = ["Launching"]
    elif _is_true(node.node, cond.CONDITION_READY):
        states = ["Ready"]
    else:
        states = ["NotReady"]
    disrupted_taint = any(t.get("key") == TAINT_DISRUPTED_KEY for t in node.taints)
    if (
        node.deleting
        or disrupted_taint
        or claim_condition(node.nodeclaim, cond.NODECLAIM_DISRUPTION_REASON) is not None
    ):
        states.append("disrupting")
    if _is_true(node.nodeclaim, cond.NODECLAIM_DRIFTED):
        states.append("drifted")
    expiry = _expiry(node.nodeclaim)
    if expiry is not None and expiry - now <= EXPIRING_WITHIN:
        states.append("expiring")
    return tuple(states)


def node_row(
    node: StateNode,
    prices: PriceBook,
    now: datetime,
    requests: Callable[[JSON], ResourceMap] | None = None,
) -> NodeRow:
    labels = node.labels
    instance_type = labels.get(LABEL_INSTANCE_TYPE)
    capacity_type = labels.get(LABEL_CAPACITY_TYPE)
    zone = labels.get(LABEL_TOPOLOGY_ZONE)
    price, exact = prices.price(instance_type, capacity_type, zone)
    allocatable = node.allocatable
    requested = (
        node.pod_requests if requests is None else sum_requests(requests(p) for p in node.pods)
    )
    source = node.node if node.node is not None else node.nodeclaim
    return NodeRow(
        key=node.key,
        name=node.name,
        nodeclaim=node.nodeclaim_name,
        nodepool=node.nodepool,
        instance_type=instance_type,
        capacity_type=capacity_type,
        zone=zone,
        price=price,
        price_exact=exact,
        cpu_requested=int(requested.get("cpu", 0)),
        cpu_allocatable=int(allocatable.get("cpu", 0)),
        memory_requested=int(requested.get("memory", 0)),
        memory_allocatable=int(allocatable.get("memory", 0)),
        pods=len(node.pods),
        created=parse_time(((source or {}).get("metadata") or {}).get("creationTimestamp")),
        states=_states(node, now),
        labels=labels,
    )


# -- filters and sorts ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Filter:
    """Rows of these NodePools (all when empty) whose labels match the selector (all when
    None), used less than `utilisation_below` (a fraction; the larger of CPU and memory) and
    costing at least `cost_above` $/h (an unpriced node never does)."""

    nodepools: frozenset[str] = frozenset()
    selector: LabelSelector | None = None
    utilisation_below: float | None = None
    cost_above: float | None = None

    def matches(self, row: NodeRow) -> bool:
        if self.nodepools and (row.nodepool or "") not in self.nodepools:
            return False
        if self.utilisation_below is not None and row.utilisation >= self.utilisation_below:
            return False
        if self.cost_above is not None and (row.price is None or row.price < self.cost_above):
            return False
        return self.selector is None or self.selector.matches(row.labels)

    def describe(self) -> str:
        parts = []
        if self.nodepools:
            parts.append("nodepool in (" + ",".join(sorted(self.nodepools)) + ")")
        if self.selector is not None and self.selector.exprs:
            parts.append(str(self.selector))
        if self.utilisation_below is not None:
            parts.append(f"utilisation < {self.utilisation_below:.0%}")
        if self.cost_above is not None:
            parts.append(f"$/h >= {self.cost_above:g}")
        return ", ".join(parts) or "all nodes"


def _age_key(row: NodeRow) -> float:
    return -row.created.timestamp() if row.created is not None else float("inf")


SORTS: Final[Mapping[str, Callable[[NodeRow], Any]]] = {
    # each key's natural order: the row a person looks for first comes first
    "name": lambda r: r.name,
    "nodepool": lambda r: (r.nodepool or "\uffff", r.name),
    "cost": lambda r: (-(r.price or 0.0), r.name),
    "utilisation": lambda r: (r.utilisation, r.name),
    "cpu": lambda r: (r.cpu_utilisation, r.name),
    "memory": lambda r: (r.memory_utilisation, r.name),
    "age": lambda r: (-_age_key(r), r.name),
}
"""Sort keys: name and NodePool A to Z, cost most expensive first, utilisation (the larger of
CPU and memory), CPU and memory least used first, age oldest first."""


# -- totals ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PoolTotal:
    nodepool: str
    """"" for nodes without a NodePool."""
    nodes: int
    per_hour: float
    unpriced: int
    source: str
    """`status` (the NodePool's `status.cost`) or `catalogue` (the sum of its rows)."""
    cpu_requested: int
    cpu_allocatable: int
    memory_requested: int
    memory_allocatable: int

    @property
    def per_month(self) -> float:
        return self.per_hour * HOURS_PER_MONTH

    def to_dict(self) -> JSON:
        return {
            "nodePool": self.nodepool or None,
            "nodes": self.nodes,
            "perHour": round(self.per_hour, 6),
            "perMonth": round(self.per_month, 2),
            "unpricedNodes": self.unpriced,
            "source": self.source,
            "cpu": {
                "requested": _cores(self.cpu_requested),
                "allocatable": _cores(self.cpu_allocatable),
            },
            "memory": {
                "requestedBytes": self.memory_requested,
                "allocatableBytes": self.memory_allocatable,
            },
        }


@dataclass(frozen=True, slots=True)
class ClusterTotal:
    nodes: int
    per_hour: float
    unpriced: int
    lower_bound: float | None
    """The hourly cost `karpy simulate` proves no placement of the running pods can beat, or
    None until computed (or when it cannot be)."""

    @property
    def per_month(self) -> float:
        return self.per_hour * HOURS_PER_MONTH

    def to_dict(self) -> JSON:
        return {
            "nodes": self.nodes,
            "perHour": round(self.per_hour, 6),
            "perMonth": round(self.per_month, 2),
            "unpricedNodes": self.unpriced,
            "lowerBoundPerHour": None if self.lower_bound is None else round(self.lower_bound, 6),
            "lowerBoundPerMonth": (
                None if self.lower_bound is None else round(self.lower_bound * HOURS_PER_MONTH, 2)
            ),
        }


def _status_cost(pool: Mapping[str, Any] | None) -> float | None:
    raw = ((pool or {}).get("status") or {}).get("cost")
    if raw in (None, ""):
        return None
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None


def _pool_totals(
    shown: Sequence[NodeRow], every: Sequence[NodeRow], nodepools: Mapping[str, JSON]
) -> list[PoolTotal]:
    out = []
    names = sorted({r.nodepool or "" for r in shown}, key=lambda n: (n == "", n))
    for name in names:
        rows = [r for r in shown if (r.nodepool or "") == name]
        status = _status_cost(nodepools.get(name)) if name else None
        complete = len(rows) == sum(1 for r in every if (r.nodepool or "") == name)
        use_status = status is not None and complete
        out.append(
            PoolTotal(
                nodepool=name,
                nodes=len(rows),
                per_hour=(
                    status
                    if use_status and status is not None
                    else sum(r.price or 0.0 for r in rows)
                ),
                unpriced=0 if use_status else sum(1 for r in rows if r.price is None),
                source="status" if use_status else "catalogue",
                cpu_requested=sum(r.cpu_requested for r in rows),
                cpu_allocatable=sum(r.cpu_allocatable for r in rows),
                memory_requested=sum(r.memory_requested for r in rows),
                memory_allocatable=sum(r.memory_allocatable for r in rows),
            )
        )
    return out


# -- the view -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FleetView:
    """What is shown at one moment."""

    now: datetime
    rows: list[NodeRow]
    pools: list[PoolTotal]
    cluster: ClusterTotal
    filter: Filter
    sort: str
    reverse: bool

    def to_dict(self) -> JSON:
        return {
            "time": self.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "filter": self.filter.describe(),
            "sort": self.sort,
            "nodes": [r.to_dict(self.now) for r in self.rows],
            "nodePools": [p.to_dict() for p in self.pools],
            "cluster": self.cluster.to_dict(),
        }


def build_view(
    nodes: Sequence[StateNode],
    *,
    nodepools: Iterable[JSON],
    prices: PriceBook,
    now: datetime,
    filter: Filter | None = None,
    sort: str = "name",
    reverse: bool = False,
    lower_bound: float | None = None,
    requests: Callable[[JSON], ResourceMap] | None = None,
) -> FleetView:
    """Rows of the nodes `filter` keeps, sorted; totals of those rows. `requests` gives a
    pod's requests (default: parsed each time)."""
    if sort not in SORTS:
        raise ValueError(f"sort {sort!r}: one of {', '.join(SORTS)}")
    chosen = filter or Filter()
    every = [node_row(n, prices, now, requests) for n in nodes]
    shown = sorted((r for r in every if chosen.matches(r)), key=SORTS[sort], reverse=reverse)
    pools = _pool_totals(shown, every, {_key(p): p for p in nodepools})
    return FleetView(
        now=now,
        rows=shown,
        pools=pools,
        cluster=ClusterTotal(
            nodes=len(shown),
            per_hour=sum(p.per_hour for p in pools),
            unpriced=sum(p.unpriced for p in pools),
            lower_bound=lower_bound,
        ),
        filter=chosen,
        sort=sort,
        reverse=reverse,
    )


# -- formatting shared by the table and the app ---------------------------------------------------

_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int = 10) -> str:
    """A horizontal bar `width` cells wide, in eighths of a cell (over 100 % fills it)."""
    cells = max(0.0, min(fraction, 1.0)) * width
    full = int(cells)
    part = int((cells - full) * 8)
    text = "█" * full + (_EIGHTHS[part] if full < width and part else "")
    return text.ljust(width, "·")


def quantity(amount: int, *, memory: bool) -> str:
    """CPU millicores as cores, memory bytes in Gi (one decimal)."""
    if memory:
        return f"{amount / 2**30:.1f}Gi"
    return f"{amount / 1000:g}"


def age_text(age: timedelta | None) -> str:
    """kubectl's short ages: 45s, 12m, 5h, 3d."""
    if age is None:
        return "-"
    seconds = max(0, int(age.total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit == "d" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
