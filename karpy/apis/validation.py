"""Admit or reject an object against a CRD's structural schema, the way the apiserver does.

Order, as in kube-apiserver: fill in schema defaults, reject unknown fields (kubectl's strict field
validation), check the OpenAPI constraints, then evaluate the CEL rules
(`x-kubernetes-validations`, transition rules only when the stored object is given) unless a
blocking error (wrong type, missing field, enum, too long, too many) came first. Errors carry the
apiserver's field paths and messages, so both sides report the same lines.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from karpy.apis.cel import CelError, compile_rule, search
from karpy.apis.errors import (
    BLOCKING,
    DUPLICATE,
    NOT_SUPPORTED,
    REQUIRED,
    RULES_NOT_CHECKED,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    UNKNOWN_FIELD,
    FieldError,
)
from karpy.apis.schema import JSON

__all__ = ["apply_defaults", "check_rules", "check_schema", "validate"]


def validate(
    value: Mapping[str, Any], schema: JSON, *, old: Mapping[str, Any] | None = None
) -> tuple[JSON, list[FieldError]]:
    """Default a copy of `value` and validate it; returns the defaulted copy and every error."""
    defaulted: JSON = copy.deepcopy(dict(value))
    apply_defaults(defaulted, schema)
    errors = list(check_schema(defaulted, schema, ""))
    unknown = [e for e in errors if e.type == UNKNOWN_FIELD]
    if unknown:
        # Strict decoding fails before validation: unknown fields are all that is reported.
        return defaulted, unknown
    if any(e.type in BLOCKING for e in errors):
        # Wrong types, missing fields, enum and size violations block the CEL rules.
        if _has_rules(schema):
            errors.append(FieldError("<nil>", f"Invalid value: null: {RULES_NOT_CHECKED}"))
        return defaulted, errors
    old_defaulted: Any = None
    if old is not None:
        old_defaulted = copy.deepcopy(dict(old))
        apply_defaults(old_defaulted, schema)
    errors.extend(check_rules(defaulted, schema, "", old_defaulted))
    return defaulted, errors


def apply_defaults(value: Any, schema: JSON) -> None:
    """Fill absent (or null) properties that have a default, top-down, defaults included."""
    if isinstance(value, dict):
        for name, prop in schema.get("properties", {}).items():
            if value.get(name) is None and "default" in prop:
                value[name] = copy.deepcopy(prop["default"])
            if name in value:
                apply_defaults(value[name], prop)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                apply_defaults(item, extra)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            apply_defaults(item, schema["items"])


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _shown(value: Any) -> str:
    """The apiserver shows scalar values in a rule failure and omits lists and objects."""
    if isinstance(value, list | dict):
        return ""
    if isinstance(value, bool):
        return f"{str(value).lower()}: "
    return f"{_quote(value)}: "


def _quote(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _is_type(value: Any, expected: str) -> bool:
    match expected:
        case "string":
            return isinstance(value, str)
        case "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "boolean":
            return isinstance(value, bool)
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
    return True


def check_schema(value: Any, schema: JSON, path: str) -> Iterator[FieldError]:
    """OpenAPI checks: type, required, unknown fields, enum, pattern, bounds, sizes, formats."""
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _is_type(value, "integer")):
            yield _type_error(path, value, "integer or string")
            return
    elif "type" in schema and not _is_type(value, schema["type"]):
        yield _type_error(path, value, schema["type"])
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_quote(v) for v in schema["enum"])
        yield FieldError(
            path,
            f"Unsupported value: {_quote(value)}: supported values: {supported}",
            NOT_SUPPORTED,
        )
        return
    if isinstance(value, str):
        yield from _check_string(value, schema, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield from _check_number(value, schema, path)
    elif isinstance(value, list):
        yield from _check_array(value, schema, path)
    elif isinstance(value, dict):
        yield from _check_object(value, schema, path)


def _type_error(path: str, value: Any, expected: str) -> FieldError:
    got = _type_name(value)
    return FieldError(
        path,
        f'Invalid value: "{got}": {path} in body must be of type {expected}: "{got}"',
        TYPE_INVALID,
    )


def _check_string(value: str, schema: JSON, path: str) -> Iterator[FieldError]:
    """Like kube-openapi, report only the first failing string constraint."""
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        yield FieldError(
            path, f"Too long: may not be more than {schema['maxLength']} bytes", TOO_LONG
        )
    elif "minLength" in schema and len(value) < schema["minLength"]:
        yield FieldError(
            path,
            f"Invalid value: {_quote(value)}: {path} in body should be at least "
            f"{schema['minLength']} chars long",
        )
    elif "pattern" in schema and not search(schema["pattern"], value):
        yield FieldError(
            path,
            f"Invalid value: {_quote(value)}: {path} in body should match '{schema['pattern']}'",
        )
    elif schema.get("format") == "date-time" and not _is_datetime(value):
        yield FieldError(
            path,
            f"Invalid value: {_quote(value)}: {path} in body must be of type date-time: "
            f"{_quote(value)}",
        )


def _is_datetime(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in value or " " in value


def _check_number(value: float, schema: JSON, path: str) -> Iterator[FieldError]:
    if "minimum" in schema and value < schema["minimum"]:
        yield FieldError(
            path,
            f"Invalid value: {value}: {path} in body should be greater than or equal to "
            f"{schema['minimum']}",
        )
    if "maximum" in schema and value > schema["maximum"]:
        yield FieldError(
            path,
            f"Invalid value: {value}: {path} in body should be less than or equal to "
            f"{schema['maximum']}",
        )


def _check_array(value: list[Any], schema: JSON, path: str) -> Iterator[FieldError]:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        yield FieldError(
            path, f"Too many: {len(value)}: must have at most {schema['maxItems']} items", TOO_MANY
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        yield FieldError(
            path,
            f"Invalid value: {len(value)}: {path} in body should have at least "
            f"{schema['minItems']} items",
        )
    items = schema.get("items", {})
    for index, item in enumerate(value):
        yield from check_schema(item, items, f"{path}[{index}]")
    if schema.get("x-kubernetes-list-type") == "set":
        seen: list[Any] = []
        for index, item in enumerate(value):
            if item in seen:
                yield FieldError(f"{path}[{index}]", f"Duplicate value: {_quote(item)}", DUPLICATE)
            seen.append(item)


def _check_object(value: dict[str, Any], schema: JSON, path: str) -> Iterator[FieldError]:
    properties: JSON = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        yield FieldError(
            path,
            f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
            TOO_MANY,
        )
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        yield FieldError(
            path,
            f"Invalid value: {len(value)}: {path} in body should have at least "
            f"{schema['minProperties']} properties",
        )
    for name in schema.get("required", []):
        if name not in value:
            yield FieldError(_join(path, name), "Required value", REQUIRED)
    for name, item in value.items():
        if name in properties:
            if item is None:
                if not properties[name].get("nullable"):
                    yield _type_error(_join(path, name), item, _expected(properties[name]))
                continue
            yield from check_schema(item, properties[name], _join(path, name))
        elif isinstance(extra, dict):
            yield from check_schema(item, extra, _join(path, name))
        elif properties and not schema.get("x-kubernetes-preserve-unknown-fields"):
            full = _join(path, name)
            yield FieldError(full, f'unknown field "{full}"', UNKNOWN_FIELD)


def _expected(schema: JSON) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer or string"
    return str(schema.get("type", "object"))


def _has_rules(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    children = list(schema.get("properties", {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            children.append(schema[key])
    return any(_has_rules(c) for c in children)


def check_rules(value: Any, schema: JSON, path: str, old: Any = None) -> Iterator[FieldError]:
    """Evaluate `x-kubernetes-validations` top-down; transition rules only where `old` exists."""
    for entry in schema.get("x-kubernetes-validations", []):
        transition = "oldSelf" in entry["rule"]
        if transition and old is None:
            continue  # not compiled either: a create never needs it
        program = compile_rule(entry["rule"])
        try:
            ok = program.evaluate(value, old if transition else None)
        except CelError as exc:
            yield FieldError(
                path,
                f'Invalid value: "{_type_name(value)}": {exc} evaluating rule: {entry["message"]}',
            )
            continue
        if not ok:
            yield FieldError(path, f"Invalid value: {_shown(value)}{entry['message']}")
    if isinstance(value, dict):
        properties: JSON = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            old_item = old.get(name) if isinstance(old, dict) else None
            if name in properties:
                yield from check_rules(item, properties[name], _join(path, name), old_item)
            elif isinstance(extra, dict):
                yield from check_rules(item, extra, _join(path, name), old_item)
    elif isinstance(value, list) and "items" in schema:
        # Atomic lists have no identity across updates, so items see no oldSelf.
        for index, item in enumerate(value):
            yield from check_rules(item, schema["items"], f"{path}[{index}]", None)
