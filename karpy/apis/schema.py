"""Kubernetes schema metadata on pydantic models, and the builder of structural OpenAPI v3 schemas.

The models are the single description of our API: a field's type, default, bounds, pattern and
CEL rules live next to it (as `Schema` and `Rule` markers in `Annotated` metadata), and both the
CustomResourceDefinitions and the Python-side validation (`karpy.apis.validation`) are derived
from the schema built here. pydantic itself only gives typed access; it enforces none of these
constraints, so no rule exists twice.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import (
    Annotated,
    Any,
    ClassVar,
    Final,
    Literal,
    TypeVar,
    Union,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined


class _Unset:
    """Marks a `Schema` attribute that was not given."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rule:
    """One `x-kubernetes-validations` entry: a CEL expression that must hold, and its message."""

    rule: str
    message: str

    def to_schema(self) -> dict[str, str]:
        return {"message": self.message, "rule": self.rule}

    @property
    def is_transition(self) -> bool:
        """Transition rules compare with the stored object and only run on updates."""
        return "oldSelf" in self.rule


@dataclass(frozen=True, slots=True, kw_only=True)
class Schema:
    """OpenAPI properties of a type or field; several markers on one type are merged in order."""

    description: str | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_properties: int | None = None
    max_properties: int | None = None
    format: str | None = None
    default: Any = UNSET
    emit_default: bool = True
    rules: tuple[Rule, ...] = ()
    list_type: Literal["atomic", "set", "map"] | None = None
    list_map_keys: tuple[str, ...] | None = None
    int_or_string: bool = False
    opaque: bool = False

    def merge(self, other: Schema) -> Schema:
        """`other` overrides what it sets; rules accumulate."""
        changes: dict[str, Any] = {}
        for f in fields(other):
            value = getattr(other, f.name)
            if f.name == "rules":
                changes["rules"] = self.rules + value
            elif f.name == "emit_default":
                changes["emit_default"] = self.emit_default and value
            elif value is not UNSET and value is not None and value is not False:
                changes[f.name] = value
        return replace(self, **changes)


class K8sModel(BaseModel):
    """Base of every API model: camelCase JSON names, unknown fields rejected.

    `k8s_rules` holds CEL rules of the object itself (only a class's own, not inherited ones).
    A field's docstring (the string below it) is its description in the schema; it is read
    from the source when a schema is built (`field_docs`), not when the class is created:
    pydantic's `use_attribute_docstrings` would read every model's source, walking the stack,
    at every start (`karpy simulate` included), for descriptions only CRDs print.
    Validators and serializers are built at a model's first use (`defer_build`), not when the
    class is created: a command builds only those of the kinds it reads (`karpy simulate` on
    pods and NodePools builds the NodePool's alone, not the 30 others: about 0.05 s).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_default=False,
        defer_build=True,
    )
    k8s_rules: ClassVar[tuple[Rule, ...]] = ()

    def to_dict(self) -> JSON:
        """The Kubernetes JSON form: camelCase keys, absent optional fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


_BASIC_TYPES: Final[dict[type, JSON]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    datetime: {"type": "string", "format": "date-time"},
}


@functools.cache
def _module_field_docs(module: str) -> dict[str, dict[str, str]]:
    """For each top-level class of `module`, the docstrings of the fields it annotates, read
    from the module's source (parsed once: a few milliseconds)."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (KeyError, OSError, TypeError, SyntaxError):
        return {}
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs = out[node.name] = {}
        for stmt, after in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return out


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Each field's docstring, written in the class that declares the field (a redeclared
    field without one has none, as with pydantic's `use_attribute_docstrings`)."""
    docs: dict[str, str] = {}
    for name in model.model_fields:
        for cls in model.__mro__:
            if name in inspect.get_annotations(cls):
                doc = _module_field_docs(cls.__module__).get(cls.__qualname__, {}).get(name)
                if doc is not None:
                    docs[name] = doc
                break
    return docs


def model_schema(model: type[BaseModel]) -> JSON:
    """The structural OpenAPI v3 schema of a model (an object with typed properties)."""
    return _object_schema(model, Schema())


def type_schema(annotation: Any, marker: Schema | None = None) -> JSON:
    """The schema of an annotation such as `list[Annotated[str, Schema(...)]] | None`."""
    base, collected = _unwrap(annotation)
    merged = (marker or Schema()).merge(collected) if marker else collected
    return _schema(base, merged)


def _unwrap(annotation: Any) -> tuple[Any, Schema]:
    """Strip `Annotated` and `| None`, gathering the Schema markers found on the way."""
    marker = Schema()
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            args = get_args(annotation)
            annotation = args[0]
            for extra in args[1:]:
                if isinstance(extra, Schema):
                    marker = marker.merge(extra)
            continue
        if origin is Union or origin is types.UnionType:
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                raise TypeError(f"unions other than Optional are not supported: {annotation!r}")
            annotation = members[0]
            continue
        return annotation, marker


def _schema(base: Any, marker: Schema) -> JSON:
    if marker.opaque:
        out: JSON = {"type": "object"}
        if marker.description:
            out["description"] = marker.description
        return out
    origin = get_origin(base)
    if marker.int_or_string:
        out = {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        }
    elif isinstance(base, type) and issubclass(base, BaseModel):
        return _object_schema(base, marker)
    elif origin is list:
        (item,) = get_args(base)
        out = {"type": "array", "items": type_schema(item)}
    elif origin is dict:
        key, value = get_args(base)
        if key is not str:
            raise TypeError(f"map keys must be strings: {base!r}")
        out = {"type": "object", "additionalProperties": type_schema(value)}
    elif origin is Literal:
        values = list(get_args(base))
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"only string enums are supported: {base!r}")
        out = {"type": "string", "enum": values}
    elif base in _BASIC_TYPES:
        out = dict(_BASIC_TYPES[base])
    else:
        raise TypeError(f"no schema for {base!r}")
    _apply(out, marker)
    return out


def _clean(text: str | None) -> str | None:
    """Docstrings become one line per paragraph."""
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _apply(out: JSON, marker: Schema) -> None:
    """Copy the marker's constraints onto a schema node."""
    keys = (
        ("description", _clean(marker.description)),
        ("pattern", marker.pattern),
        ("minLength", marker.min_length),
        ("maxLength", marker.max_length),
        ("minimum", marker.minimum),
        ("maximum", marker.maximum),
        ("minItems", marker.min_items),
        ("maxItems", marker.max_items),
        ("minProperties", marker.min_properties),
        ("maxProperties", marker.max_properties),
        ("format", marker.format),
        ("x-kubernetes-list-type", marker.list_type),
        (
            "x-kubernetes-list-map-keys",
            list(marker.list_map_keys) if marker.list_map_keys else None,
        ),
    )
    for key, value in keys:
        if value is not None:
            out[key] = value
    if marker.default is not UNSET and marker.emit_default:
        out["default"] = _to_json(marker.default)
    if marker.rules:
        out.setdefault("x-kubernetes-validations", [])
        out["x-kubernetes-validations"].extend(r.to_schema() for r in marker.rules)


def _object_schema(model: type[BaseModel], marker: Schema) -> JSON:
    properties: JSON = {}
    required: list[str] = []
    docs = field_docs(model)
    for name, info in model.model_fields.items():
        key = info.serialization_alias or info.alias or name
        field_marker = Schema(description=info.description or docs.get(name))
        for extra in info.metadata:
            if isinstance(extra, Schema):
                field_marker = field_marker.merge(extra)
        base, inner = _unwrap(info.annotation)
        field_marker = inner.merge(field_marker)
        if field_marker.default is UNSET:
            default = _field_default(info.default, info.default_factory)
            if default is not UNSET:
                field_marker = replace(field_marker, default=default)
        if (
            isinstance(base, type)
            and issubclass(base, BaseModel)
            and field_marker.description is None
            and base.__doc__
        ):
            field_marker = replace(field_marker, description=inspect.cleandoc(base.__doc__))
        properties[key] = _schema(base, field_marker)
        if info.is_required():
            required.append(key)
    out: JSON = {"type": "object", "properties": properties}
    if required:
        out["required"] = sorted(required)
    own_rules: tuple[Rule, ...] = model.__dict__.get("k8s_rules", ())
    if own_rules:
        out["x-kubernetes-validations"] = [r.to_schema() for r in own_rules]
    if marker.description is None and model.__doc__:
        marker = replace(marker, description=inspect.cleandoc(model.__doc__))
    _apply(out, marker)
    return out


def _field_default(default: Any, factory: Any) -> Any:
    """A pydantic default as JSON, or UNSET when the field has none (None counts as none)."""
    if factory is not None:
        default = factory()
    if default is PydanticUndefined or default is None:
        return UNSET
    return _to_json(default)


def _to_json(value: Any) -> Any:
    if isinstance(value, K8sModel):
        return value.to_dict()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    return value


M = TypeVar("M", bound=BaseModel)


def validate_known(model: type[M], data: Mapping[str, Any]) -> tuple[M, list[str]]:
    """`model` from `data`, leaving out fields the model does not know, and their paths
    (`spec.enclaveOptions`). For objects read from a cluster whose CRD is newer than karpy's
    model (another release's CRD): the fields karpy knows still work; any other error raises."""
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
        if not unknown or len(unknown) != exc.error_count():
            raise
    trimmed = copy.deepcopy(dict(data))
    for loc in unknown:
        _drop(trimmed, loc)
    return model.model_validate(trimmed), [".".join(str(p) for p in loc) for loc in unknown]


def _drop(data: Any, loc: tuple[int | str, ...]) -> None:
    *parents, last = loc
    for part in parents:
        data = data[part]
    if isinstance(data, dict):
        data.pop(last, None)
