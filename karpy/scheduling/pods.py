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
from typing import Any

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
    key = _shape_key(p, meta, spec, volume_terms)
    shape = _SHAPES.get(key) if key is not None else None
    if shape is None:
        _shape(p, spec, volume_terms)
        shape = tuple(getattr(p, name) for name in _SHAPE_FIELDS)
        if key is not None:
            if len(_SHAPES) >= _MAX_SHAPES:
                _SHAPES.clear()
            _SHAPES[key] = shape
    else:
        for name, value in zip(_SHAPE_FIELDS, shape, strict=True):
            setattr(p, name, value)
    # the one mutable part a view's owner might change: each pod gets its own
    p.requests = dict(p.requests)
    return p


# Everything `_shape` sets: what a pod's spec, labels, namespace, owner and volume terms decide.
_SHAPE_FIELDS = (
    "requests",
    "unsupported",
    "node_selector",
    "required_terms",
    "preferred_node_terms",
    "tolerations",
    "spread",
    "affinity",
    "anti_affinity",
    "preferred_affinity",
    "preferred_anti_affinity",
    "host_ports",
    "volume_terms",
    "signature",
)
# Pods of one Deployment or Job share a spec: their shapes are parsed once. Bounded, and
# cleared when full rather than evicted one by one (shapes are cheap to parse again).
_SHAPES: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_MAX_SHAPES = 4096


def _shape_key(
    p: PodView,
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    volume_terms: Sequence[Requirements],
) -> tuple[Any, ...] | None:
    """What `_shape` reads, as a hashable key; None when the spec is too odd to key.

    `repr` stands for the decoded JSON/YAML values: equal reprs are equal values of the same
    types, so they parse the same (different key order only misses the cache).
    """
    try:
        return (
            p.namespace,
            p.daemon,
            tuple(volume_terms),
            repr(meta.get("labels")),
            repr(spec.get("nodeSelector")),
            repr(spec.get("affinity")),
            repr(spec.get("tolerations")),
            repr(spec.get("topologySpreadConstraints")),
            repr(spec.get("resources")),
            repr(spec.get("overhead")),
            tuple(
                (repr(c.get("resources")), repr(c.get("ports")))
                for c in spec.get("containers") or ()
            ),
            tuple(
                (repr(c.get("resources")), repr(c.get("ports")), repr(c.get("restartPolicy")))
                for c in spec.get("initContainers") or ()
            ),
        )
    except Exception:  # the uncached path reports what is wrong with the spec
        return None


def _shape(p: PodView, spec: Mapping[str, Any], volume_terms: Sequence[Requirements]) -> None:
    """Parse the scheduling constraints of `spec` into `p` (see `_SHAPE_FIELDS`)."""
    p.requests = pod_requests(spec)
    p.unsupported = ""

    p.node_selector = Requirements(
        Requirement(str(k), complement=False, values=(str(v),))
        for k, v in (spec.get("nodeSelector") or {}).items()
    )
    affinity = spec.get("affinity") or {}
    node_aff = affinity.get("nodeAffinity") or {}
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms: list[Requirements] = []
    for i, term in enumerate(required.get("nodeSelectorTerms") or ()):
        if term.get("matchFields"):
            p.unsupported = (
                f"spec.affinity.nodeAffinity...nodeSelectorTerms[{i}].matchFields is not supported"
            )
        terms.append(Requirements.from_node_selector_terms(term.get("matchExpressions") or ()))
    p.required_terms = tuple(terms)
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
    p.preferred_node_terms = tuple(preferred)
    p.tolerations = tuple(
        Toleration.from_dict(t, field=f"spec.tolerations[{i}]")
        for i, t in enumerate(spec.get("tolerations") or ())
    )
    p.spread = tuple(
        _spread(p, c, f"spec.topologySpreadConstraints[{i}]")
        for i, c in enumerate(spec.get("topologySpreadConstraints") or ())
    )
    pod_aff = affinity.get("podAffinity") or {}
    pod_anti = affinity.get("podAntiAffinity") or {}
    p.affinity = _terms(p, pod_aff, required=True, field="spec.affinity.podAffinity")
    p.anti_affinity = _terms(p, pod_anti, required=True, field="spec.affinity.podAntiAffinity")
    p.preferred_affinity = _terms(p, pod_aff, required=False, field="spec.affinity.podAffinity")
    p.preferred_anti_affinity = _terms(
        p, pod_anti, required=False, field="spec.affinity.podAntiAffinity"
    )
    ports: set[tuple[str, str, int]] = set()
    containers = list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
    for c in containers:
        for port in c.get("ports") or ():
            host_port = port.get("hostPort")
            if host_port:
                ip = str(port.get("hostIP") or "0.0.0.0")
                ports.add((ip, str(port.get("protocol") or "TCP"), int(host_port)))
    p.host_ports = frozenset(ports)
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
