"""Pods as small slotted views, built once from raw pod dicts.

The scheduler reads a pod's requests and scheduling constraints thousands of times, so they are
parsed once here into immutable views: requirements from the node selector and affinity,
tolerations, topology spread constraints, pod (anti-)affinity terms, host ports and volume
topology. Pods whose views have equal `signature`s are interchangeable for scheduling and are
handled as one class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from karpy.apis.v1.labels import LABEL_HOSTNAME
from karpy.scheduling.requirements import Requirement, RequirementError, Requirements
from karpy.scheduling.resources import ResourceError, ResourceMap, pod_requests
from karpy.scheduling.selectors import LabelSelector, SelectorError
from karpy.scheduling.taints import TaintError, Toleration

__all__ = ["AffinityTerm", "PodError", "PodView", "SpreadConstraint", "pod_view"]

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"


class PodError(ValueError):
    """A pod spec cannot be read; the message names the field."""


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod (anti-)affinity term; `weight` is 0 for required terms."""

    selector: LabelSelector
    topology_key: str
    namespaces: frozenset[str]
    # None: only `namespaces`; an empty selector matches every namespace.
    namespace_selector: LabelSelector | None = None
    weight: int = 0

    def selects(self, pod: PodView, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if pod.namespace not in self.namespaces:
            if self.namespace_selector is None:
                return False
            if not self.namespace_selector.matches(namespace_labels.get(pod.namespace, {})):
                return False
        return self.selector.matches(pod.labels)

    @property
    def is_hostname(self) -> bool:
        return self.topology_key == LABEL_HOSTNAME


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    topology_key: str
    max_skew: int
    selector: LabelSelector
    when_unsatisfiable: str = DO_NOT_SCHEDULE
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"

    @property
    def is_hostname(self) -> bool:
        return self.topology_key == LABEL_HOSTNAME


class PodView:
    """What the scheduler needs to know about one pod."""

    __slots__ = (
        "affinity",
        "anti_affinity",
        "created",
        "daemon",
        "host_ports",
        "key",
        "labels",
        "name",
        "namespace",
        "node_name",
        "node_selector",
        "preferred_affinity",
        "preferred_anti_affinity",
        "preferred_node_terms",
        "priority",
        "requests",
        "required_terms",
        "signature",
        "spread",
        "tolerations",
        "uid",
        "unsupported",
        "volume_terms",
    )

    namespace: str
    name: str
    key: str
    uid: str
    labels: dict[str, str]
    requests: ResourceMap
    created: str
    priority: int
    node_name: str
    daemon: bool
    node_selector: Requirements
    required_terms: tuple[Requirements, ...]
    preferred_node_terms: tuple[tuple[int, Requirements], ...]
    tolerations: tuple[Toleration, ...]
    spread: tuple[SpreadConstraint, ...]
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti_affinity: tuple[AffinityTerm, ...]
    host_ports: frozenset[tuple[str, str, int]]
    volume_terms: tuple[Requirements, ...]
    unsupported: str
    signature: tuple[Any, ...]

    def strict_requirements(self) -> Requirements:
        """Node selector plus the first required affinity term (what Karpenter uses)."""
        reqs = self.node_selector
        if self.required_terms:
            reqs = reqs.union(self.required_terms[0])
        return reqs

    def requirement_alternatives(self) -> list[Requirements]:
        """Every way the pod's hard node constraints can be met (OR of affinity and volume)."""
        terms = list(self.required_terms) or [Requirements()]
        vols = list(self.volume_terms) or [Requirements()]
        return [self.node_selector.union(t).union(v) for t in terms for v in vols]

    def __repr__(self) -> str:
        return f"PodView({self.key})"


def pod_view(
    raw: Mapping[str, Any],
    *,
    volume_terms: Sequence[Requirements] = (),
    daemon: bool | None = None,
) -> PodView:
    """Build a `PodView` from a pod dict (as the API returns it, camelCase)."""
    try:
        return _build(raw, volume_terms=volume_terms, daemon=daemon)
    except (ResourceError, RequirementError, SelectorError, TaintError) as err:
        raise PodError(str(err)) from None


def _build(
    raw: Mapping[str, Any], *, volume_terms: Sequence[Requirements], daemon: bool | None
) -> PodView:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    p = PodView.__new__(PodView)
    p.namespace = str(meta.get("namespace") or "default")
    p.name = str(meta.get("name") or meta.get("generateName") or "")
    p.key = f"{p.namespace}/{p.name}"
    p.uid = str(meta.get("uid") or p.key)
    p.labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    p.created = str(meta.get("creationTimestamp") or "")
    p.priority = int(spec.get("priority") or 0)
    p.node_name = str(spec.get("nodeName") or "")
    owners = meta.get("ownerReferences") or ()
    p.daemon = (
        daemon
        if daemon is not None
        else any(o.get("kind") == "DaemonSet" and o.get("controller", True) for o in owners)
    )
    spec_key = _spec_key(spec)
    parts = _SPECS.get(spec_key) if spec_key is not None else None
    if parts is None:
        parts = _remember(_SPECS, spec_key, _spec_parts(spec))
    requests, node_terms, p.tolerations, p.host_ports = parts
    # each view gets its own requests dict: the one mutable part its owner might change
    p.requests = dict(requests)
    p.node_selector, p.required_terms, p.preferred_node_terms, p.unsupported = node_terms
    # the pod's labels enter its pod terms only through matchLabelKeys and mismatchLabelKeys
    if spec_key is not None and b"LabelKeys" not in spec_key:
        terms_key: Any = (p.namespace, spec_key)
    else:
        terms_key = _terms_key(p.namespace, meta, spec)
    pod_terms = _POD_TERMS.get(terms_key) if terms_key is not None else None
    if pod_terms is None:
        pod_terms = _remember(_POD_TERMS, terms_key, _pod_terms(p, spec))
    (
        p.spread,
        p.affinity,
        p.anti_affinity,
        p.preferred_affinity,
        p.preferred_anti_affinity,
    ) = pod_terms
    p.volume_terms = tuple(volume_terms)
    p.signature = (
        p.namespace,
        tuple(sorted(p.labels.items())),
        tuple(sorted(p.requests.items())),
        p.node_selector,
        p.required_terms,
        p.preferred_node_terms,
        p.tolerations,
        p.spread,
        p.affinity,
        p.anti_affinity,
        p.preferred_affinity,
        p.preferred_anti_affinity,
        p.host_ports,
        p.volume_terms,
        p.unsupported,
        p.daemon,
    )
    return p


# Pods of one Deployment or Job repeat the same spec, and pods of different workloads often the
# same requests, tolerations or affinities: each is parsed once per distinct value.
#
# A whole spec is keyed on its JSON encoding (one call in C, where `repr`s of its parts cost a
# dozen): values with equal encodings are equal, types included (`1`, `1.0` and `true` encode
# apart). NaN and infinities encode as `null`, like None: an encoding holding `null` is not
# used as a key, nor one of a value JSON cannot encode (a YAML date, a huge integer).
# On a miss, each part is keyed on the `repr` of exactly the raw fields it is read from; for
# decoded JSON/YAML, equal reprs are equal values of the same types, so they parse the same (a
# different key order only misses). Only parts that parsed are kept, so an unreadable spec
# still raises its own error. The tables are bounded and cleared when full.
_SPECS: dict[Any, tuple[Any, ...]] = {}
_REQUESTS: dict[Any, ResourceMap] = {}
_NODE_TERMS: dict[Any, tuple[Any, ...]] = {}
_TOLERATIONS: dict[Any, tuple[Toleration, ...]] = {}
_POD_TERMS: dict[Any, tuple[Any, ...]] = {}
_MAX_ENTRIES = 4096
_EXACT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS

_T = TypeVar("_T")


def _remember(table: dict[Any, _T], key: Any, parsed: _T) -> _T:
    """Keep `parsed` under `key` (None: the part is not cached); returns `parsed`."""
    if key is not None:
        if len(table) >= _MAX_ENTRIES:
            table.clear()
        table[key] = parsed
    return parsed


def _spec_key(spec: Mapping[str, Any]) -> bytes | None:
    """The whole spec's key (see above); None when it cannot be one."""
    try:
        key = orjson.dumps(spec, option=_EXACT)
    except TypeError:
        return None
    return None if b"null" in key else key


def _spec_parts(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """Requests, node terms, tolerations and host ports: what a view reads from its spec alone."""
    requests_key, node_key, tolerations_key = _part_keys(spec)
    requests = _REQUESTS.get(requests_key) if requests_key is not None else None
    if requests is None:
        requests = _remember(_REQUESTS, requests_key, pod_requests(spec))
    node_terms = _NODE_TERMS.get(node_key) if node_key is not None else None
    if node_terms is None:
        node_terms = _remember(_NODE_TERMS, node_key, _node_terms(spec))
    tolerations = _TOLERATIONS.get(tolerations_key) if tolerations_key is not None else None
    if tolerations is None:
        tolerations = _remember(_TOLERATIONS, tolerations_key, _tolerations(spec))
    return requests, node_terms, tolerations, _host_ports(spec)


def _part_keys(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """The cache keys of the requests, node terms and tolerations; all None (no caching) when
    the spec is too odd to key: its parse says why."""
    try:
        return (
            (
                repr(spec.get("resources")),
                repr(spec.get("overhead")),
                tuple(repr(c.get("resources")) for c in spec.get("containers") or ()),
                tuple(
                    (repr(c.get("resources")), repr(c.get("restartPolicy")))
                    for c in spec.get("initContainers") or ()
                ),
            ),
            (repr(spec.get("nodeSelector")), repr(spec.get("affinity"))),
            repr(spec.get("tolerations")),
        )
    except Exception:  # the uncached parse reports what is wrong with the spec
        return (None, None, None)


def _terms_key(namespace: str, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Any:
    """The pod terms' key from the fields they are read from (None: not cached)."""
    try:
        return (
            namespace,
            repr(meta.get("labels")),
            repr(spec.get("topologySpreadConstraints")),
            repr(spec.get("affinity")),
        )
    except Exception:  # the uncached parse reports what is wrong with the spec
        return None


def _host_ports(spec: Mapping[str, Any]) -> frozenset[tuple[str, str, int]]:
    ports: set[tuple[str, str, int]] = set()
    containers = list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
    for c in containers:
        for port in c.get("ports") or ():
            host_port = port.get("hostPort")
            if host_port:
                ip = str(port.get("hostIP") or "0.0.0.0")
                ports.add((ip, str(port.get("protocol") or "TCP"), int(host_port)))
    return frozenset(ports)


def _node_terms(
    spec: Mapping[str, Any],
) -> tuple[Requirements, tuple[Requirements, ...], tuple[tuple[int, Requirements], ...], str]:
    """Node selector, required and preferred node affinity terms, and what is unsupported."""
    unsupported = ""
    node_selector = Requirements(
        Requirement(str(k), complement=False, values=(str(v),))
        for k, v in (spec.get("nodeSelector") or {}).items()
    )
    affinity = spec.get("affinity") or {}
    node_aff = affinity.get("nodeAffinity") or {}
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms: list[Requirements] = []
    for i, term in enumerate(required.get("nodeSelectorTerms") or ()):
        if term.get("matchFields"):
            unsupported = (
                f"spec.affinity.nodeAffinity...nodeSelectorTerms[{i}].matchFields is not supported"
            )
        terms.append(Requirements.from_node_selector_terms(term.get("matchExpressions") or ()))
    preferred: list[tuple[int, Requirements]] = []
    for pref in node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        term = pref.get("preference") or {}
        preferred.append(
            (
                int(pref.get("weight") or 0),
                Requirements.from_node_selector_terms(term.get("matchExpressions") or ()),
            )
        )
    preferred.sort(key=lambda wp: -wp[0])
    return node_selector, tuple(terms), tuple(preferred), unsupported


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration.from_dict(t, field=f"spec.tolerations[{i}]")
        for i, t in enumerate(spec.get("tolerations") or ())
    )


def _pod_terms(p: PodView, spec: Mapping[str, Any]) -> tuple[tuple[Any, ...], ...]:
    """Spread constraints and pod (anti-)affinity terms: they read `p`'s namespace and labels."""
    spread = tuple(
        _spread(p, c, f"spec.topologySpreadConstraints[{i}]")
        for i, c in enumerate(spec.get("topologySpreadConstraints") or ())
    )
    affinity = spec.get("affinity") or {}
    pod_aff = affinity.get("podAffinity") or {}
    pod_anti = affinity.get("podAntiAffinity") or {}
    return (
        spread,
        _terms(p, pod_aff, required=True, field="spec.affinity.podAffinity"),
        _terms(p, pod_anti, required=True, field="spec.affinity.podAntiAffinity"),
        _terms(p, pod_aff, required=False, field="spec.affinity.podAffinity"),
        _terms(p, pod_anti, required=False, field="spec.affinity.podAntiAffinity"),
    )


def _with_label_keys(p: PodView, selector: LabelSelector, raw: Mapping[str, Any]) -> LabelSelector:
    extra: list[tuple[str, str, tuple[str, ...]]] = []
    for key in raw.get("matchLabelKeys") or ():
        if key in p.labels:
            extra.append((str(key), "In", (p.labels[key],)))
    for key in raw.get("mismatchLabelKeys") or ():
        if key in p.labels:
            extra.append((str(key), "NotIn", (p.labels[key],)))
    return selector.with_exprs(*extra)


def _spread(p: PodView, raw: Mapping[str, Any], field: str) -> SpreadConstraint:
    key = raw.get("topologyKey")
    if not key:
        raise PodError(f"{field}.topologyKey: required")
    skew = raw.get("maxSkew", 1)
    if not isinstance(skew, int) or skew < 1:
        raise PodError(f"{field}.maxSkew: must be a positive integer, got {skew!r}")
    when = raw.get("whenUnsatisfiable") or DO_NOT_SCHEDULE
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise PodError(f"{field}.whenUnsatisfiable: {when!r} unsupported")
    selector = LabelSelector.from_dict(raw.get("labelSelector"), field=f"{field}.labelSelector")
    min_domains = raw.get("minDomains")
    return SpreadConstraint(
        topology_key=str(key),
        max_skew=skew,
        selector=_with_label_keys(p, selector, raw),
        when_unsatisfiable=str(when),
        min_domains=int(min_domains) if min_domains is not None else None,
        node_affinity_policy=str(raw.get("nodeAffinityPolicy") or "Honor"),
        node_taints_policy=str(raw.get("nodeTaintsPolicy") or "Ignore"),
    )


def _terms(
    p: PodView, raw: Mapping[str, Any], *, required: bool, field: str
) -> tuple[AffinityTerm, ...]:
    out: list[AffinityTerm] = []
    if required:
        items = [(0, t) for t in raw.get("requiredDuringSchedulingIgnoredDuringExecution") or ()]
    else:
        items = [
            (int(w.get("weight") or 0), w.get("podAffinityTerm") or {})
            for w in raw.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ]
    for i, (weight, term) in enumerate(items):
        key = term.get("topologyKey")
        if not key:
            raise PodError(f"{field}[{i}].topologyKey: required")
        selector = LabelSelector.from_dict(term.get("labelSelector"), field=f"{field}[{i}]")
        ns_sel_raw = term.get("namespaceSelector")
        namespaces = frozenset(str(n) for n in term.get("namespaces") or ())
        ns_selector = None
        if ns_sel_raw is not None:
            ns_selector = LabelSelector.from_dict(
                ns_sel_raw, field=f"{field}[{i}].namespaceSelector"
            )
        elif not namespaces:
            namespaces = frozenset({p.namespace})
        out.append(
            AffinityTerm(
                selector=_with_label_keys(p, selector, term),
                topology_key=str(key),
                namespaces=namespaces,
                namespace_selector=ns_selector,
                weight=weight,
            )
        )
    if not required:
        out.sort(key=lambda t: -t.weight)
    return tuple(out)
