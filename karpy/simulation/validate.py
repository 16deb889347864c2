"""Shape checks for the objects `karpy simulate` reads, before anything is built from them.

Scenario files are written by hand or exported by kubectl, so any field may hold the wrong
type (`labels: [a]`, `nodeSelector: x`, `containers: 5`) or a value the API server would
refuse (a negative request, a zero `maxSkew`). Each check walks the fields the simulation reads
and raises `FieldError` with the path of the first bad one, so the caller can name the file,
the document and the field in one line instead of failing deep inside the scheduler. `null` is
accepted wherever a field is optional, as the API server treats it as absent.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

from karpy.scheduling.quantity import QuantityError, milli_value

__all__ = ["FieldError", "check_metadata", "check_object", "describe"]

WORKLOADS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet", "ReplicationController")
TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = (*SELECTOR_OPERATORS, "Gt", "Lt")


# A field's path, spelled out only when a check fails: (parent, key) for `parent.key`, (parent,
# index) for `parent[index]`. Checking 20,000 pods builds about a million of these; formatting
# each one as text on the way down would cost more than the checks themselves.
Path = str | tuple["Path", str | int]


def render(path: Path) -> str:
    """`spec.containers[0].resources` from its pieces."""
    parts: list[str] = []
    while isinstance(path, tuple):
        path, last = path
        parts.append(f"[{last}]" if isinstance(last, int) else f".{last}")
    parts.append(path)
    return "".join(reversed(parts))


class FieldError(ValueError):
    """A field holds the wrong type or a value Kubernetes rejects; `path` names it."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = render(path)
        super().__init__(f"{self.path}: {problem}")


def describe(value: Any) -> str:
    """A value in the words of YAML/JSON, short enough for a one-line message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {text!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()} (quote it to make it a string)"
    return f"a {type(value).__name__}"


# ---- primitives --------------------------------------------------------------------------------


def _obj(value: Any, path: Path) -> Mapping[str, Any]:
    # decoded YAML and JSON objects are dicts; the exact check is much cheaper than Mapping's
    if type(value) is dict:
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(path, f"must be an object, got {describe(value)}")
    return value


def _list(value: Any, path: Path) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldError(path, f"must be a list, got {describe(value)}")
    return value


def _objects(value: Any, path: Path) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    for i, item in enumerate(_list(value, path)):
        where = (path, i)
        yield where, _obj(item, where)


def _str(value: Any, path: Path, *, allowed: tuple[str, ...] = ()) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldError(path, f"must be a string, got {describe(value)}")
    if allowed and value not in allowed:
        raise FieldError(path, f"Unsupported value {value!r}: must be one of {', '.join(allowed)}")
    return value


def _int(value: Any, path: Path, *, minimum: int | None = None, maximum: int | None = None) -> int:
    if value is None:
        return minimum or 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise FieldError(path, f"must be an integer, got {describe(value)}")
    if minimum is not None and value < minimum:
        raise FieldError(path, f"Invalid value {value}: must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise FieldError(path, f"Invalid value {value}: must be at most {maximum}")
    return value


def _string_map(value: Any, path: Path) -> None:
    if type(value) is dict and all(type(item) is str for item in value.values()):
        return  # the usual case, checked without a call per entry
    for key, item in _obj(value, path).items():
        if not isinstance(item, str):
            raise FieldError((path, str(key)), f"must be a string, got {describe(item)}")


def _strings(value: Any, path: Path) -> None:
    for i, item in enumerate(_list(value, path)):
        _str(item, (path, i))


# the amounts already parsed: an export repeats a handful of them thousands of times
_MILLIS: dict[str, int] = {}


def _quantities(value: Any, path: Path, *, positive: bool = False) -> None:
    """A resource list: every amount a quantity, never negative (or zero, if `positive`)."""
    for name, amount in _obj(value, path).items():
        where = (path, str(name))
        if isinstance(amount, bool) or not isinstance(amount, str | int | float):
            raise FieldError(
                where, f"must be a quantity such as '500m' or '1Gi', got {describe(amount)}"
            )
        millis = _MILLIS.get(amount) if type(amount) is str else None
        if millis is None:
            try:
                millis = milli_value(amount)
            except QuantityError as err:
                raise FieldError(where, f"Invalid value {amount!r}: {err}") from None
            if type(amount) is str and len(_MILLIS) < 4096:
                _MILLIS[amount] = millis
        if millis < 0 or (positive and millis == 0):
            bound = "greater than zero" if positive else "greater than or equal to 0"
            raise FieldError(where, f"Invalid value {amount!r}: must be {bound}")


# ---- parts shared by several kinds -------------------------------------------------------------


def check_metadata(obj: Mapping[str, Any]) -> None:
    """The fields every object is named by; checked for every document, used or not."""
    meta = _obj(obj.get("metadata"), "metadata")
    _str(obj.get("kind"), "kind")
    _str(obj.get("apiVersion"), "apiVersion")
    _str(meta.get("name"), "metadata.name")
    _str(meta.get("namespace"), "metadata.namespace")


Check = Callable[[Any, Path], None]


def _fields(obj: Mapping[str, Any], path: Path, table: Mapping[str, Check]) -> None:
    """Check the fields of `obj` that `table` knows and that are set; absent ones cost nothing
    (a pod spec from an export sets a dozen fields, of hundreds)."""
    for key, value in obj.items():
        check = table.get(key)
        if check is None or value is None:
            continue
        if check is _string:
            if type(value) is not str:
                _str(value, (path, key))  # raises, naming the field
            continue
        check(value, (path, key))


def _each(table: Mapping[str, Check]) -> Check:
    """A check of a list of objects, each checked against `table`."""

    def check(value: Any, path: Path) -> None:
        for where, item in _objects(value, path):
            _fields(item, where, table)

    return check


def _one(table: Mapping[str, Check]) -> Check:
    """A check of an object against `table`."""

    def check(value: Any, path: Path) -> None:
        _fields(_obj(value, path), path, table)

    return check


# JSON encoding of a value for `_once`: values JSON cannot encode (YAML dates, non-string keys,
# huge integers) raise, and are checked every time
_EXACT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
_ONCE_MAX = 4096


def _once(check: Check) -> Check:
    """`check`, skipped for a value equal to one that passed it already.

    The pods of one workload repeat its tolerations, affinity and spreads: an export of 20,000
    pods holds a few dozen distinct ones. A check depends on the value alone (the path only
    names a failure), and values with equal JSON encodings are equal, types included. An
    encoding holding `null` is never remembered: orjson writes NaN and infinities so too."""
    passed: set[bytes] = set()

    def check_once(value: Any, path: Path) -> None:
        try:
            key = orjson.dumps(value, option=_EXACT)
        except TypeError:
            check(value, path)
            return
        if key in passed:
            return
        check(value, path)
        if b"null" not in key:
            if len(passed) >= _ONCE_MAX:
                passed.clear()
            passed.add(key)

    return check_once


def _string(value: Any, path: Path) -> None:
    _str(value, path)


def _enum(*allowed: str) -> Check:
    def check(value: Any, path: Path) -> None:
        _str(value, path, allowed=allowed)

    return check


def _integer(minimum: int | None = None, maximum: int | None = None) -> Check:
    def check(value: Any, path: Path) -> None:
        _int(value, path, minimum=minimum, maximum=maximum)

    return check


def _resource_list(value: Any, path: Path) -> None:
    _quantities(value, path)


_OBJECT_META: dict[str, Check] = {
    "name": _string,
    "namespace": _string,
    "generateName": _string,
    "uid": _string,
    "labels": _string_map,
    "annotations": _string_map,
    "ownerReferences": _once(_each({"kind": _string, "name": _string})),
}
_LABEL_SELECTOR: dict[str, Check] = {
    "matchLabels": _string_map,
    "matchExpressions": _each(
        {"key": _string, "operator": _enum(*SELECTOR_OPERATORS), "values": _strings}
    ),
}
_NODE_SELECTOR_REQUIREMENTS = _each(
    {"key": _string, "operator": _enum(*NODE_SELECTOR_OPERATORS), "values": _strings}
)
_NODE_SELECTOR_TERM: dict[str, Check] = {
    "matchExpressions": _NODE_SELECTOR_REQUIREMENTS,
    "matchFields": _NODE_SELECTOR_REQUIREMENTS,
}
_POD_AFFINITY_TERM: dict[str, Check] = {
    "topologyKey": _string,
    "labelSelector": _one(_LABEL_SELECTOR),
    "namespaceSelector": _one(_LABEL_SELECTOR),
    "namespaces": _strings,
    "matchLabelKeys": _strings,
    "mismatchLabelKeys": _strings,
}
_POD_AFFINITY: dict[str, Check] = {
    "requiredDuringSchedulingIgnoredDuringExecution": _each(_POD_AFFINITY_TERM),
    "preferredDuringSchedulingIgnoredDuringExecution": _each(
        {"weight": _integer(1, 100), "podAffinityTerm": _one(_POD_AFFINITY_TERM)}
    ),
}
_AFFINITY: dict[str, Check] = {
    "nodeAffinity": _one(
        {
            "requiredDuringSchedulingIgnoredDuringExecution": _one(
                {"nodeSelectorTerms": _each(_NODE_SELECTOR_TERM)}
            ),
            "preferredDuringSchedulingIgnoredDuringExecution": _each(
                {"weight": _integer(1, 100), "preference": _one(_NODE_SELECTOR_TERM)}
            ),
        }
    ),
    "podAffinity": _one(_POD_AFFINITY),
    "podAntiAffinity": _one(_POD_AFFINITY),
}
_RESOURCES: dict[str, Check] = {"requests": _resource_list, "limits": _resource_list}
_CONTAINER: dict[str, Check] = {
    "name": _string,
    "restartPolicy": _string,
    "resources": _once(_one(_RESOURCES)),
    "ports": _each(
        {
            "containerPort": _integer(0, 65535),
            "hostPort": _integer(0, 65535),
            "hostIP": _string,
            "protocol": _enum("TCP", "UDP", "SCTP"),
        }
    ),
}


def _spread(value: Any, path: Path) -> None:
    for where, tsc in _objects(value, path):
        if tsc.get("maxSkew") is None:
            raise FieldError((where, "maxSkew"), "Required value")
        _fields(tsc, where, _SPREAD)


_SPREAD: dict[str, Check] = {
    "maxSkew": _integer(1),
    "minDomains": _integer(1),
    "topologyKey": _string,
    "whenUnsatisfiable": _enum("DoNotSchedule", "ScheduleAnyway"),
    "labelSelector": _one(_LABEL_SELECTOR),
    "matchLabelKeys": _strings,
}
_POD_SPEC: dict[str, Check] = {
    "initContainers": _each(_CONTAINER),
    "nodeSelector": _string_map,
    "nodeName": _string,
    "priorityClassName": _string,
    "priority": _integer(),
    "affinity": _once(_one(_AFFINITY)),
    "overhead": _resource_list,
    "resources": _one(_RESOURCES),
    "tolerations": _once(
        _each(
            {
                "key": _string,
                "operator": _enum(*TOLERATION_OPERATORS),
                "value": _string,
                "effect": _enum(*TAINT_EFFECTS),
                "tolerationSeconds": _integer(),
            }
        )
    ),
    "topologySpreadConstraints": _once(_spread),
    "volumes": _each({"name": _string, "persistentVolumeClaim": _one({"claimName": _string})}),
}


def _object_meta(meta_value: Any, path: Path) -> None:
    _fields(_obj(meta_value, path), path, _OBJECT_META)


def _node_selector_terms(value: Any, path: Path) -> None:
    _each(_NODE_SELECTOR_TERM)(value, path)


def _pod_spec(value: Any, path: Path) -> None:
    if value is None:
        raise FieldError(path, "Required value")
    spec = _obj(value, path)
    containers = list(_objects(spec.get("containers"), (path, "containers")))
    if not containers:
        raise FieldError((path, "containers"), "Required value")
    for where, container in containers:
        _fields(container, where, _CONTAINER)
    _fields(spec, path, _POD_SPEC)


def _pod_template(spec: Mapping[str, Any], path: Path) -> None:
    if spec.get("template") is None:
        raise FieldError((path, "template"), "Required value")
    template = _obj(spec.get("template"), (path, "template"))
    _object_meta(template.get("metadata"), (path, "template.metadata"))
    _pod_spec(template.get("spec"), (path, "template.spec"))


def _claim_spec(spec: Mapping[str, Any], path: Path) -> None:
    _str(spec.get("storageClassName"), (path, "storageClassName"))
    _str(spec.get("volumeName"), (path, "volumeName"))
    resources = _obj(spec.get("resources"), (path, "resources"))
    _quantities(resources.get("requests"), (path, "resources.requests"), positive=True)


# ---- kinds ------------------------------------------------------------------------------------


# the pods of one workload share their whole spec: each distinct one is checked once
_checked_pod_spec = _once(_pod_spec)


def _pod(obj: Mapping[str, Any]) -> None:
    _checked_pod_spec(obj.get("spec"), "spec")
    status = _obj(obj.get("status"), "status")
    _str(status.get("phase"), "status.phase")


def _workload(obj: Mapping[str, Any]) -> None:
    spec = _obj(obj.get("spec"), "spec")
    kind = obj.get("kind")
    if kind == "Job":
        _int(spec.get("parallelism"), "spec.parallelism", minimum=0)
        _int(spec.get("completions"), "spec.completions", minimum=0)
    elif kind != "DaemonSet":
        _int(spec.get("replicas"), "spec.replicas", minimum=0)
    _pod_template(spec, "spec")
    if kind == "StatefulSet":
        for where, claim in _objects(spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates"):
            _object_meta(claim.get("metadata"), (where, "metadata"))
            _claim_spec(_obj(claim.get("spec"), (where, "spec")), (where, "spec"))


def _node(obj: Mapping[str, Any]) -> None:
    spec = _obj(obj.get("spec"), "spec")
    for where, taint in _objects(spec.get("taints"), "spec.taints"):
        _str(taint.get("key"), (where, "key"))
        _str(taint.get("value"), (where, "value"))
        _str(taint.get("effect"), (where, "effect"), allowed=TAINT_EFFECTS)
    status = _obj(obj.get("status"), "status")
    _quantities(status.get("allocatable"), "status.allocatable")
    _quantities(status.get("capacity"), "status.capacity")


def _claim(obj: Mapping[str, Any]) -> None:
    _claim_spec(_obj(obj.get("spec"), "spec"), "spec")


def _volume(obj: Mapping[str, Any]) -> None:
    spec = _obj(obj.get("spec"), "spec")
    affinity = _obj(spec.get("nodeAffinity"), "spec.nodeAffinity")
    required = _obj(affinity.get("required"), "spec.nodeAffinity.required")
    _node_selector_terms(
        required.get("nodeSelectorTerms"), "spec.nodeAffinity.required.nodeSelectorTerms"
    )
    _quantities(spec.get("capacity"), "spec.capacity", positive=True)


def _storage_class(obj: Mapping[str, Any]) -> None:
    _str(
        obj.get("volumeBindingMode"),
        "volumeBindingMode",
        allowed=("Immediate", "WaitForFirstConsumer"),
    )
    for where, term in _objects(obj.get("allowedTopologies"), "allowedTopologies"):
        exprs = (where, "matchLabelExpressions")
        for at, expr in _objects(term.get("matchLabelExpressions"), exprs):
            _str(expr.get("key"), (at, "key"))
            _strings(expr.get("values"), (at, "values"))


def _nothing_more(obj: Mapping[str, Any]) -> None:
    """NodePools are validated against their schema and CEL rules by the API models."""


CHECKS: dict[str, Callable[[Mapping[str, Any]], None]] = {
    "Pod": _pod,
    **dict.fromkeys(WORKLOADS, _workload),
    "Node": _node,
    "PersistentVolumeClaim": _claim,
    "PersistentVolume": _volume,
    "StorageClass": _storage_class,
}


def check_object(obj: Mapping[str, Any]) -> None:
    """Raise `FieldError` for the first field of `obj` the simulation cannot use."""
    _object_meta(obj.get("metadata"), "metadata")
    CHECKS.get(str(obj.get("kind")), _nothing_more)(obj)
