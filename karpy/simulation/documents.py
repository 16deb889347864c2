"""Reading scenario files: bytes in, validated Kubernetes objects out.

Accepts what people have: multi-document YAML, JSON, and `List`s such as `kubectl get
pods,nodes -o json` prints. Every problem becomes a `ScenarioError` whose one-line message names
the file, the document (its 1-based position, kind and name) and the field. Fields no simulation
reads but exports are full of (`managedFields`, the last-applied annotation, status conditions,
node images) are dropped while decoding, so a large export costs little memory.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import orjson

from karpy.simulation.validate import (
    WORKLOADS,
    FieldError,
    check_metadata,
    check_object,
    describe,
)

__all__ = ["DEFAULT_MAX_PODS", "Document", "ScenarioError", "read_documents"]

# Enough for Karpenter's largest benchmark; more needs `--max-pods`, since every pod costs
# about 10 KB of memory and scheduling time grows with the count.
DEFAULT_MAX_PODS = 20_000
TERMINAL_PHASES = ("Succeeded", "Failed")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# status fields the engine's inputs read (karpy.state): the rest of a status is dropped
_STATUS_KEPT = {
    "Pod": frozenset({"phase", "nominatedNodeName", "startTime"}),
    "Node": frozenset({"phase", "allocatable", "capacity", "conditions"}),
}

_BOM = "\ufeff".encode()
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")


class _Metadata(TypedDict, total=False):
    """ObjectMeta without `managedFields`: a quarter of a kubectl export, read by nothing."""

    name: Any
    generateName: Any
    namespace: Any
    selfLink: Any
    uid: Any
    resourceVersion: Any
    generation: Any
    creationTimestamp: Any
    deletionTimestamp: Any
    deletionGracePeriodSeconds: Any
    labels: Any
    annotations: Any
    ownerReferences: Any
    finalizers: Any


class _Object(TypedDict, total=False):
    """The top-level fields of every kind a scenario uses: most have only these five..."""

    apiVersion: Any
    kind: Any
    metadata: _Metadata
    spec: Any
    status: Any
    # ... a List its items (and a List's items are objects: a nested List is skipped unread) ...
    items: list[_Object]
    # ... a PodTemplate its template, a StorageClass its own
    template: Any
    provisioner: Any
    parameters: Any
    reclaimPolicy: Any
    allowVolumeExpansion: Any
    mountOptions: Any
    volumeBindingMode: Any
    allowedTopologies: Any


@functools.cache
def _trimming() -> Any:
    """Decodes straight into dicts and lists, as orjson does, skipping what `_Object` does not
    name (managedFields above all) without building it: about a third faster on an export.
    Made for the first JSON file: a YAML scenario never loads msgspec."""
    import msgspec

    return msgspec.json.Decoder(list[_Object] | _Object)


class ScenarioError(ValueError):
    """Invalid input: the message names the file, the document and the field."""


class Document:
    """One object of a scenario file; its kind, name and namespace are read once."""

    __slots__ = ("index", "kind", "name", "namespace", "obj", "source")

    def __init__(self, source: str, index: int, obj: Mapping[str, Any]) -> None:
        self.source = source
        self.index = index  # 1-based position in its file (items of a List count as their own)
        self.obj = obj
        meta = obj.get("metadata") or {}
        self.kind = str(obj.get("kind") or "")
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "default")

    def where(self) -> str:
        return _where(self.source, self.index, self.obj)


def _where(source: str, index: int, obj: Mapping[str, Any]) -> str:
    """`file: document N (Kind 'name')`, with whatever of kind and name is readable."""
    kind = obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    label = " ".join(
        [
            *([kind] if isinstance(kind, str) and kind else []),
            *([repr(name)] if isinstance(name, str) and name else []),
        ]
    )
    return f"{source}: document {index}" + (f" ({label})" if label else "")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _prune(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what exports carry and the simulation never reads."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(_LAST_APPLIED, None)
        status = obj.get("status")
        kind = obj.get("kind")
        kept = _STATUS_KEPT.get(kind) if isinstance(kind, str) else None
        if isinstance(status, dict) and kept is not None:
            obj["status"] = {k: v for k, v in status.items() if k in kept}
        elif kind in ("NodePool", "SchedulingConfig", "NodeOverlay"):
            obj.pop("status", None)  # the cluster's record, not part of the scenario
    return obj


def _read(path: str) -> tuple[str, bytes]:
    source = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as err:
        raise ScenarioError(f"{source}: cannot read: {err.strerror}") from None
    return source, data.removeprefix(_BOM)


def _text(source: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ScenarioError(
            f"{source}: not UTF-8 text: byte 0x{data[err.start]:02x} at offset {err.start} "
            f"(line {line}); save the file as UTF-8"
        ) from None


def _parse(source: str, data: bytes) -> list[Any]:
    """JSON for `.json` files and text that looks like JSON, else multi-document YAML (also
    the fallback for YAML whose first document is written in flow style).

    JSON is decoded straight from the bytes, without a decoded copy of the text: objects of the
    usual shape (`_Object`) by msgspec, which skips the fields no simulation reads, anything
    else by orjson (about twice as fast as the standard library), whose errors are reported.
    Both check UTF-8; the standard decoder names the bad byte when that fails."""
    space = _LEADING_SPACE.match(data)
    first = space.end() if space else 0
    looks_json = data[first : first + 1] in (b"{", b"[")
    if source.endswith(".json") or looks_json:
        import msgspec

        try:
            return [_trimming().decode(data)]
        except msgspec.MsgspecError:
            pass  # not of that shape, or not JSON: orjson takes it as it is, or says why
        try:
            return [orjson.loads(data)]
        except orjson.JSONDecodeError as err:
            _text(source, data)  # not UTF-8: say so, with the offending byte
            if "depth limit" in str(err):  # orjson stops at 1,024 levels
                raise ScenarioError(
                    f"{source}: nested too deeply to be a Kubernetes object"
                ) from None
            if source.endswith(".json"):
                raise ScenarioError(f"{source}: not valid JSON: {err}") from None
            json_error = err
    text = _text(source, data)
    del data
    import yaml  # only for YAML: a JSON export never pays for it

    # libyaml is several times faster; PyYAML's pure-Python loader is the fallback
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as err:
        if looks_json:
            raise ScenarioError(f"{source}: not valid JSON: {json_error}") from None
        raise ScenarioError(f"{source}: not valid YAML: {_one_line(str(err))}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: nested too deeply to be a Kubernetes object") from None


def _items(doc: Any) -> list[Any]:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
        items = doc.get("items")
        if items is not None and not isinstance(items, list):
            raise FieldError("items", "must be a list")
        return items or []
    return [doc]


def _documents(paths: Sequence[str]) -> Iterator[Document]:
    for path in paths:
        source, data = _read(path)
        loaded = _parse(source, data)
        del data
        index = 0
        for doc in loaded:
            try:
                items = _items(doc)
            except FieldError as err:
                raise ScenarioError(f"{source}: document {index + 1} (List): {err}") from None
            for item in items:
                if item is None:
                    continue
                index += 1
                if not isinstance(item, dict):
                    raise ScenarioError(
                        f"{source}: document {index}: must be an object, got {describe(item)}"
                    )
                try:
                    check_metadata(item)
                except FieldError as err:
                    raise ScenarioError(f"{_where(source, index, item)}: {err}") from None
                yield Document(source, index, _prune(item))
        loaded.clear()


def _pod_count(doc: Document) -> int:
    """Pods this document adds to the plan (DaemonSet pods are per node, not counted)."""
    if doc.kind == "Pod":
        return 1
    if doc.kind not in WORKLOADS or doc.kind == "DaemonSet":
        return 0
    spec = doc.obj.get("spec") or {}
    if doc.kind == "Job":
        parallelism = spec.get("parallelism")
        completions = spec.get("completions")
        parallelism = 1 if parallelism is None else parallelism
        return int(parallelism if completions is None else min(parallelism, completions))
    replicas = spec.get("replicas")
    return 1 if replicas is None else int(replicas)


def read_documents(
    paths: Sequence[str],
    *,
    used: frozenset[str] | None = None,
    max_pods: int = DEFAULT_MAX_PODS,
    warnings: list[str] | None = None,
) -> Iterator[Document]:
    """Every object of every file, Lists flattened, empty documents dropped.

    Objects whose kind is in `used` (all, when None) are checked field by field; pods that
    have finished are left out (with a warning); more than `max_pods` pods is an error.
    """
    pods = 0
    for doc in _documents(paths):
        if not doc.kind:
            raise ScenarioError(f"{doc.where()}: kind: Required value")
        if used is not None and doc.kind not in used:
            yield doc
            continue
        if not doc.name:
            raise ScenarioError(f"{doc.where()}: metadata.name: Required value")
        try:
            check_object(doc.obj)
        except FieldError as err:
            raise ScenarioError(f"{doc.where()}: {err}") from None
        if doc.kind == "Pod" and (doc.obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            if warnings is not None:
                phase = doc.obj["status"]["phase"]
                warnings.append(f"{doc.where()}: skipped: the pod has finished ({phase})")
            continue
        pods += _pod_count(doc)
        if pods > max_pods:
            field = {"Pod": "kind", "Job": "spec.parallelism"}.get(doc.kind, "spec.replicas")
            raise ScenarioError(
                f"{doc.where()}: {field}: the scenario has more than {max_pods} pods, the "
                f"limit for one simulation; raise it with --max-pods"
            )
        yield doc
