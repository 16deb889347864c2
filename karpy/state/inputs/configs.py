"""SchedulingConfigs as the engine's inputs see them: guard rails on NodePools, and parameters.

A config's requirements are added to every NodePool template whose NodeClass it names (every
template when it names none); a template whose requirements become unsatisfiable (a key with no
value left, or fewer values than a `minValues`) is left out of the plan. The `default` config's
parameters win over the settings. Both planners build their inputs through `build_input`, so
`karpy run` and `karpy simulate` apply configs alike; the controllers use `conflicts` for the
NodePool condition.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from karpy.apis.duration import parse_duration
from karpy.apis.v1 import group_of_ref
from karpy.apis.v1.labels import WELL_KNOWN_LABELS
from karpy.apis.v1.schedulingconfig import DEFAULT_NAME
from karpy.scheduling.engine.model import MinValuesPolicy, NodePoolTemplate, PreferencePolicy
from karpy.scheduling.instancetypes import selectable_keys
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirements

__all__ = [
    "Conflict",
    "Explainer",
    "Guardrail",
    "NodeClassKey",
    "Parameters",
    "Ruling",
    "conflicts",
    "constrain_templates",
    "guardrails",
    "nodeclass_key",
    "nodepool_nodeclass",
    "parameters",
    "with_default_spread",
]

JSON = Mapping[str, Any]
NodeClassKey = tuple[str, str, str]
"""(group, kind, name) of a nodeClassRef."""


def nodeclass_key(ref: Mapping[str, Any] | None) -> NodeClassKey | None:
    """The (group, kind, name) of a raw nodeClassRef (group from `group` or `apiVersion`)."""
    if not ref:
        return None
    return group_of_ref(dict(ref)), str(ref.get("kind") or ""), str(ref.get("name") or "")


def nodepool_nodeclass(nodepool: JSON) -> NodeClassKey | None:
    """The NodeClass a raw NodePool's template references."""
    tspec = ((nodepool.get("spec") or {}).get("template") or {}).get("spec") or {}
    return nodeclass_key(tspec.get("nodeClassRef"))


@dataclass(frozen=True)
class Guardrail:
    """One SchedulingConfig's requirements and the NodeClass they are for (None: all)."""

    name: str
    nodeclass: NodeClassKey | None
    requirements: Requirements

    def applies_to(self, nodeclass: NodeClassKey | None) -> bool:
        return self.nodeclass is None or self.nodeclass == nodeclass


@dataclass(frozen=True)
class Conflict:
    """A config leaves a NodePool's requirement on `key` unsatisfiable."""

    config: str
    key: str
    detail: str

    def message(self) -> str:
        return f'SchedulingConfig "{self.config}" makes key {self.key} unsatisfiable: {self.detail}'


def guardrails(configs: Iterable[JSON]) -> list[Guardrail]:
    """The configs' requirements, by name (a config's unreadable requirement raises ValueError
    naming it; the CRD admits none)."""
    out = []
    for obj in sorted(configs, key=_name):
        spec = obj.get("spec") or {}
        try:
            reqs = Requirements.from_node_selector_terms(spec.get("requirements") or ())
        except ValueError as err:
            raise ValueError(f"SchedulingConfig {_name(obj)}: spec.requirements: {err}") from None
        out.append(Guardrail(_name(obj), nodeclass_key(spec.get("nodeClassRef")), reqs))
    return out


def conflicts(
    requirements: Requirements, nodeclass: NodeClassKey | None, rails: Sequence[Guardrail]
) -> list[Conflict]:
    """Why `requirements` (a NodePool's) cannot hold together with the configs that apply to
    its NodeClass: each key left without a value, or with fewer values than its minValues."""
    found: list[Conflict] = []
    merged = requirements
    for rail in rails:
        if not rail.applies_to(nodeclass):
            continue
        for key, theirs in rail.requirements.items():
            mine = merged.get(key)
            if mine is not None and not mine.intersects(theirs):
                found.append(Conflict(rail.name, key, f"{theirs.describe()} and {mine.describe()}"))
                continue
            both = theirs if mine is None else mine.intersection(theirs)
            if not both.complement and both.min_values and len(both.values) < both.min_values:
                found.append(
                    Conflict(
                        rail.name,
                        key,
                        f"{both.describe()} keeps fewer than minValues {both.min_values}",
                    )
                )
        merged = merged.union(rail.requirements)
    return found


def constrain_templates(
    templates: Sequence[NodePoolTemplate],
    nodeclasses: Mapping[str, NodeClassKey | None],
    rails: Sequence[Guardrail],
) -> tuple[list[NodePoolTemplate], dict[str, list[Conflict]]]:
    """The templates with their configs' requirements added, and the NodePools left out
    because a config makes them unsatisfiable (name -> conflicts)."""
    if not rails:
        return list(templates), {}
    kept: list[NodePoolTemplate] = []
    dropped: dict[str, list[Conflict]] = {}
    for template in templates:
        nodeclass = nodeclasses.get(template.name)
        found = conflicts(template.node_requirements, nodeclass, rails)
        if found:
            dropped[template.name] = found
            continue
        added = [r.requirements for r in rails if r.applies_to(nodeclass)]
        reqs = template.requirements
        for extra in added:
            reqs = reqs.union(extra)
        kept.append(dataclasses.replace(template, requirements=reqs) if added else template)
    return kept, dropped


# -- the default config's parameters ---------------------------------------------------------


@dataclass(frozen=True)
class Parameters:
    """Scheduling parameters the `default` config sets (None: the setting applies)."""

    batch_idle: timedelta | None = None
    batch_max: timedelta | None = None
    preference_policy: PreferencePolicy | None = None
    min_values_policy: MinValuesPolicy | None = None
    spread: tuple[Mapping[str, Any], ...] = ()


def parameters(configs: Iterable[JSON]) -> Parameters:
    """The parameters of the config named `default`, if there is one."""
    for obj in configs:
        if _name(obj) != DEFAULT_NAME:
            continue
        spec = obj.get("spec") or {}
        preference = spec.get("preferencePolicy")
        min_values = spec.get("minValuesPolicy")
        return Parameters(
            batch_idle=_duration(spec.get("batchIdleDuration")),
            batch_max=_duration(spec.get("batchMaxDuration")),
            preference_policy=preference if preference in ("Respect", "Ignore") else None,
            min_values_policy=min_values if min_values in ("Strict", "BestEffort") else None,
            spread=tuple(dict(c) for c in spec.get("topologySpreadConstraints") or ()),
        )
    return Parameters()


def _duration(text: Any) -> timedelta | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_duration(text)
    except ValueError:
        return None


def with_default_spread(pod: JSON, spread: Sequence[Mapping[str, Any]]) -> JSON:
    """The pod with the default spread constraints when it declares none of its own, each
    selecting the pods with the same labels (kube-scheduler derives the selector from the
    pod's controller; its labels are what identify those pods here). Unchanged otherwise.

    The copy's resourceVersion is marked, so a cached view of the pod as written is not
    taken for it."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    pod_labels = meta.get("labels") or {}
    if not spread or spec.get("topologySpreadConstraints") or not pod_labels:
        return pod
    constraints = [
        {
            "maxSkew": int(c.get("maxSkew") or 1),
            "topologyKey": str(c.get("topologyKey") or ""),
            "whenUnsatisfiable": str(c.get("whenUnsatisfiable") or "ScheduleAnyway"),
            "labelSelector": {"matchLabels": dict(pod_labels)},
        }
        for c in spread
    ]
    digest = hashlib.sha256(json.dumps(constraints, sort_keys=True).encode()).hexdigest()[:12]
    version = f"{meta.get('resourceVersion') or ''}+spread-{digest}"
    return {
        **pod,
        "metadata": {**meta, "resourceVersion": version},
        "spec": {**spec, "topologySpreadConstraints": constraints},
    }


# -- saying why pods stay pending ------------------------------------------------------------


class Explainer:
    """Adds to a pending pod's scheduling error the configs that kept it off a NodePool it
    would otherwise fit, so its event names the config and the key."""

    def __init__(
        self,
        *,
        pods: Sequence[PodView],
        templates: Sequence[NodePoolTemplate],
        nodeclasses: Mapping[str, NodeClassKey | None],
        rails: Sequence[Guardrail],
        dropped: Mapping[str, Sequence[Conflict]],
    ) -> None:
        self._pods = {p.key: p for p in pods} if rails else {}
        self._dropped = dropped
        self._templates = list(templates)
        self._nodeclasses = nodeclasses
        self._rails = list(rails)
        self._well_known = WELL_KNOWN_LABELS | selectable_keys(
            it for t in templates for it in t.instance_types
        )

    def explain(self, errors: Mapping[str, str]) -> dict[str, str]:
        out = dict(errors)
        for key, why in errors.items():
            pod = self._pods.get(key)
            if pod is None:
                continue
            notes = self.notes(pod)
            if notes:
                out[key] = f"{why}; " + "; ".join(notes)
        return out

    def notes(self, pod: PodView) -> list[str]:
        """One line per (config, NodePool) that rules the pod out."""
        return [r.message() for rs in self.rulings(pod).values() for r in rs]

    def dropped(self, nodepool: str) -> Sequence[Conflict]:
        """Why a config leaves `nodepool` out of every plan (empty: it does not)."""
        return self._dropped.get(nodepool, ())

    def rulings(self, pod: PodView) -> dict[str, list[Ruling]]:
        """NodePool -> the configs that keep the pod off it, for the NodePools whose own
        requirements would take it (a NodePool a config leaves out names its conflicts)."""
        found: dict[str, list[Ruling]] = {}
        alternatives = pod.requirement_alternatives()
        for template in self._templates:
            own = template.node_requirements
            fitting = [
                alt
                for alt in alternatives
                if own.compatible(alt, well_known=self._well_known) is None
            ]
            if not fitting:
                continue
            dropped = self._dropped.get(template.name)
            if dropped:
                found[template.name] = [
                    Ruling(template.name, c.config, c.key, c.message(), left_out=True)
                    for c in dropped
                ]
                continue
            nodeclass = self._nodeclasses.get(template.name)
            for rail in self._rails:
                if not rail.applies_to(nodeclass):
                    continue
                reasons = [rail.requirements.intersects(alt) for alt in fitting]
                if all(r is not None for r in reasons):
                    alt = fitting[0]
                    key = next(
                        (
                            k
                            for k, r in rail.requirements.items()
                            if k in alt and not r.intersects(alt[k])
                        ),
                        "",
                    )
                    found.setdefault(template.name, []).append(
                        Ruling(template.name, rail.name, key, str(reasons[0]))
                    )
        return found


@dataclass(frozen=True)
class Ruling:
    """A SchedulingConfig keeps a pod off a NodePool: on `key` (its requirement has no value
    the pod allows), or because it leaves the NodePool out altogether (`left_out`)."""

    nodepool: str
    config: str
    key: str
    detail: str
    left_out: bool = False

    def message(self) -> str:
        if self.left_out:
            return f'nodepool "{self.nodepool}" is not used: {self.detail}'
        return (
            f'SchedulingConfig "{self.config}" rules out nodepool "{self.nodepool}", {self.detail}'
        )


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
