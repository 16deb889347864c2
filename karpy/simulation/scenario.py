"""Reading a scenario: real manifests in, a `SchedulingInput` out.

A scenario is any mix of Kubernetes objects in YAML or JSON files (multi-document, or `List`s).
Kinds the simulation uses are validated and turned into scheduler inputs; workloads are expanded
into the pods their controllers would create (named `<workload>-<index>`); every other kind is
skipped with a warning, so manifests can be fed as they are. Invalid input raises
`ScenarioError` naming the file, the document and the field.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from karpy.apis.errors import ValidationError
from karpy.apis.v1 import validate_nodepool
from karpy.scheduling import (
    InstanceType,
    PodError,
    PodView,
    Requirement,
    Requirements,
    ResourceError,
    TaintError,
    pod_view,
)
from karpy.scheduling.engine import ExistingNode, NodePoolTemplate, SchedulingInput

__all__ = ["Scenario", "ScenarioError", "load_scenario", "read_documents"]

WORKLOADS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet", "ReplicationController")
USED = frozenset(
    {
        "NodePool",
        "Pod",
        "Node",
        "Namespace",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "StorageClass",
        "EC2NodeClass",
        "KWOKNodeClass",
        *WORKLOADS,
    }
)
_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


class ScenarioError(ValueError):
    """Invalid input: the message names the file, the document and the field."""


@dataclass(frozen=True)
class Document:
    source: str
    index: int  # 1-based position in its file (items of a List count as their own)
    obj: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name") or "")

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace") or "default")

    def where(self) -> str:
        label = f"{self.kind} {self.name!r}" if self.name else (self.kind or "object")
        return f"{self.source}: document {self.index} ({label})"


@dataclass
class Scenario:
    input: SchedulingInput
    warnings: list[str] = field(default_factory=list)


def read_documents(paths: Sequence[str]) -> Iterator[Document]:
    """Every object of every file, Lists flattened, empty documents dropped."""
    for path in paths:
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text()
        except OSError as err:
            raise ScenarioError(f"{path}: cannot read: {err.strerror}") from None
        source = "<stdin>" if path == "-" else path
        try:
            if source.endswith(".json") or text.lstrip().startswith(("{", "[")):
                loaded: list[Any] = [json.loads(text)]
            else:
                loaded = list(yaml.safe_load_all(text))
        except (json.JSONDecodeError, yaml.YAMLError) as err:
            raise ScenarioError(f"{source}: not valid YAML or JSON: {err}") from None
        index = 0
        for doc in loaded:
            items: list[Any]
            if isinstance(doc, list):
                items = doc
            elif (
                isinstance(doc, dict)
                and str(doc.get("kind", "")).endswith("List")
                and "items" in doc
            ):
                items = list(doc.get("items") or [])
            else:
                items = [doc]
            for item in items:
                if item is None:
                    continue
                index += 1
                if not isinstance(item, dict):
                    raise ScenarioError(f"{source}: document {index}: expected an object")
                yield Document(source, index, item)


def _require_name(doc: Document) -> None:
    if not doc.name:
        raise ScenarioError(f"{doc.where()}: metadata.name: Required value")


def _pod_from_template(doc: Document, index: int, *, daemon: bool = False) -> dict[str, Any]:
    spec = doc.obj.get("spec") or {}
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise ScenarioError(f"{doc.where()}: spec.template: Required value")
    meta = template.get("metadata") or {}
    name = f"{doc.name}-{index}"
    return {
        "metadata": {
            "name": name,
            "namespace": doc.namespace,
            "uid": f"{doc.namespace}/{name}",
            "labels": dict(meta.get("labels") or {}),
            "ownerReferences": [{"kind": doc.kind, "name": doc.name, "controller": True}],
            "creationTimestamp": (doc.obj.get("metadata") or {}).get("creationTimestamp") or "",
        },
        "spec": dict(template.get("spec") or {}),
    }


def _replicas(doc: Document) -> int:
    spec = doc.obj.get("spec") or {}
    if doc.kind == "Job":
        parallelism = spec.get("parallelism", 1)
        completions = spec.get("completions")
        value = parallelism if completions is None else min(parallelism, completions)
        field_name = "spec.parallelism"
    else:
        value = spec.get("replicas", 1)
        field_name = "spec.replicas"
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScenarioError(f"{doc.where()}: {field_name}: must be a non-negative integer")
    return value


class _Volumes:
    """Volume topology: which zones (or nodes) a pod's persistent volumes tie it to."""

    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.volumes: dict[str, Mapping[str, Any]] = {}
        self.classes: dict[str, Mapping[str, Any]] = {}

    def default_class(self) -> str | None:
        for name, sc in sorted(self.classes.items()):
            ann = (sc.get("metadata") or {}).get("annotations") or {}
            if ann.get(_DEFAULT_CLASS) == "true":
                return name
        return None

    def terms(self, pod: Mapping[str, Any], where: str) -> list[Requirements]:
        ns = str((pod.get("metadata") or {}).get("namespace") or "default")
        alternatives = [Requirements()]
        for vol in (pod.get("spec") or {}).get("volumes") or ():
            pvc_ref = vol.get("persistentVolumeClaim")
            if not pvc_ref:
                continue
            claim = self.claims.get((ns, str(pvc_ref.get("claimName"))))
            if claim is None:
                raise ScenarioError(
                    f"{where}: spec.volumes: PersistentVolumeClaim "
                    f"{ns}/{pvc_ref.get('claimName')} is not in the scenario"
                )
            options = self._claim_terms(claim, where)
            if options:
                alternatives = [a.union(o) for a in alternatives for o in options]
        return [] if alternatives == [Requirements()] else alternatives

    def _claim_terms(self, claim: Mapping[str, Any], where: str) -> list[Requirements]:
        spec = claim.get("spec") or {}
        bound = spec.get("volumeName")
        if bound:
            pv = self.volumes.get(str(bound))
            if pv is None:
                return []
            affinity = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
            return [
                _requirements(t.get("matchExpressions") or (), where)
                for t in affinity.get("nodeSelectorTerms") or ()
            ]
        sc_name = spec.get("storageClassName") or self.default_class()
        sc = self.classes.get(str(sc_name)) if sc_name else None
        if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
            return []
        out = []
        for term in sc.get("allowedTopologies") or ():
            reqs = [
                Requirement(
                    str(e.get("key")),
                    complement=False,
                    values=[str(v) for v in e.get("values") or ()],
                )
                for e in term.get("matchLabelExpressions") or ()
            ]
            out.append(Requirements(reqs))
        return out


def _requirements(exprs: Any, where: str) -> Requirements:
    try:
        return Requirements.from_node_selector_terms(exprs)
    except ValueError as err:
        raise ScenarioError(f"{where}: {err}") from None


def load_scenario(paths: Sequence[str], *, instance_types: Sequence[InstanceType]) -> Scenario:
    """Read the files and build the scheduler's input; raise `ScenarioError` on bad input."""
    warnings: list[str] = []
    nodepools: list[tuple[Document, NodePoolTemplate]] = []
    pod_docs: list[tuple[Document, dict[str, Any]]] = []
    daemon_docs: list[tuple[Document, dict[str, Any]]] = []
    node_docs: list[Document] = []
    namespaces: dict[str, dict[str, str]] = {}
    volumes = _Volumes()
    seen_pools: set[str] = set()
    for doc in read_documents(paths):
        kind = doc.kind
        if not kind:
            raise ScenarioError(f"{doc.where()}: kind: Required value")
        if kind not in USED:
            warnings.append(f"{doc.where()}: skipped: karpy simulate does not use {kind} objects")
            continue
        _require_name(doc)
        if kind == "NodePool":
            try:
                model = validate_nodepool(doc.obj)
            except ValidationError as err:
                raise ScenarioError(f"{doc.where()}: {err}") from None
            if model.name in seen_pools:
                raise ScenarioError(f"{doc.where()}: metadata.name: duplicate NodePool")
            seen_pools.add(model.name)
            try:
                nodepools.append(
                    (doc, NodePoolTemplate.from_nodepool(model.to_dict(), instance_types))
                )
            except (ValueError, TaintError) as err:
                raise ScenarioError(f"{doc.where()}: {err}") from None
        elif kind == "Pod":
            pod_docs.append((doc, dict(doc.obj)))
        elif kind == "DaemonSet":
            daemon_docs.append((doc, _pod_from_template(doc, 0)))
        elif kind in WORKLOADS:
            for i in range(_replicas(doc)):
                pod = _pod_from_template(doc, i)
                if kind == "StatefulSet":
                    pod = _with_claim_templates(doc, pod, i, volumes)
                pod_docs.append((doc, pod))
        elif kind == "Node":
            node_docs.append(doc)
        elif kind == "Namespace":
            namespaces[doc.name] = dict((doc.obj.get("metadata") or {}).get("labels") or {})
        elif kind == "PersistentVolumeClaim":
            volumes.claims[(doc.namespace, doc.name)] = doc.obj
        elif kind == "PersistentVolume":
            volumes.volumes[doc.name] = doc.obj
        elif kind == "StorageClass":
            volumes.classes[doc.name] = doc.obj
    pending: list[PodView] = []
    bound: dict[str, list[PodView]] = {}
    seen_pods: set[str] = set()
    for doc, raw in pod_docs:
        where = doc.where() if doc.kind == "Pod" else f"{doc.where()} pod {raw['metadata']['name']}"
        view = _view(raw, where, volumes)
        if view.key in seen_pods:
            raise ScenarioError(f"{where}: metadata.name: duplicate pod {view.key}")
        seen_pods.add(view.key)
        if view.node_name:
            bound.setdefault(view.node_name, []).append(view)
        else:
            pending.append(view)
    daemons = [_view(raw, doc.where(), volumes, daemon=True) for doc, raw in daemon_docs]
    existing = []
    for doc in node_docs:
        status = doc.obj.get("status") or {}
        if not (status.get("allocatable") or status.get("capacity")):
            raise ScenarioError(f"{doc.where()}: status.allocatable: Required value")
        try:
            existing.append(ExistingNode.from_node(doc.obj, bound.pop(doc.name, [])))
        except (ResourceError, TaintError) as err:
            raise ScenarioError(f"{doc.where()}: {err}") from None
    for node_name, views in sorted(bound.items()):
        for v in views:
            warnings.append(
                f"pod {v.key}: skipped: bound to node {node_name!r}, which is not in the scenario"
            )
    if not nodepools:
        warnings.append("no NodePool in the scenario: nothing can be launched")
    inp = SchedulingInput(
        pods=pending,
        templates=[t for _, t in nodepools],
        existing_nodes=existing,
        daemonset_pods=daemons,
        namespace_labels=namespaces,
    )
    return Scenario(input=inp, warnings=warnings)


def _view(
    raw: Mapping[str, Any], where: str, volumes: _Volumes, *, daemon: bool | None = None
) -> PodView:
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        raise ScenarioError(f"{where}: spec: Required value")
    if not spec.get("containers"):
        raise ScenarioError(f"{where}: spec.containers: Required value")
    try:
        return pod_view(raw, volume_terms=volumes.terms(raw, where), daemon=daemon)
    except (PodError, ResourceError, TaintError, ValueError) as err:
        raise ScenarioError(f"{where}: {err}") from None


def _with_claim_templates(
    doc: Document, pod: dict[str, Any], index: int, volumes: _Volumes
) -> dict[str, Any]:
    templates = (doc.obj.get("spec") or {}).get("volumeClaimTemplates") or ()
    if not templates:
        return pod
    spec = dict(pod["spec"])
    vols = list(spec.get("volumes") or ())
    for t in templates:
        tname = str((t.get("metadata") or {}).get("name") or "")
        claim_name = f"{tname}-{doc.name}-{index}"
        key = (doc.namespace, claim_name)
        if key not in volumes.claims:
            volumes.claims[key] = {
                "metadata": {"name": claim_name, "namespace": doc.namespace},
                "spec": dict(t.get("spec") or {}),
            }
        vols.append({"name": tname, "persistentVolumeClaim": {"claimName": claim_name}})
    spec["volumes"] = vols
    return {**pod, "spec": spec}
