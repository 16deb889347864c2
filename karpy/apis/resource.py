"""A custom resource: its model, names, printer columns and generated CRD, in one record.

Each kind module declares one `CustomResource`; `karpy crds` renders them all, and
`CustomResource.validate` admits objects in Python against the very schema the CRD carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar

import pydantic

from karpy.apis.errors import FieldError, ValidationError
from karpy.apis.schema import JSON, K8sModel, model_schema
from karpy.apis.validation import validate

M = TypeVar("M", bound=K8sModel)

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values."
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. In CamelCase."
)


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A column of `kubectl get` (`additionalPrinterColumns`)."""

    name: str
    json_path: str
    type: Literal["string", "integer", "number", "boolean", "date"] = "string"
    priority: int = 0
    description: str | None = None

    def to_crd(self) -> JSON:
        out: JSON = {"jsonPath": self.json_path, "name": self.name, "type": self.type}
        if self.priority:
            out["priority"] = self.priority
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class CustomResource(Generic[M]):
    """One cluster-scoped custom resource kind served at a single version."""

    model: type[M]
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ("karpenter",)
    printer_columns: tuple[PrinterColumn, ...] = ()
    # (specReplicasPath, statusReplicasPath) for a scale subresource.
    scale: tuple[str, str] | None = None
    scope: Literal["Cluster", "Namespaced"] = "Cluster"
    annotations: Mapping[str, str] = field(default_factory=dict)
    optional: bool = False
    """A kind a cluster may lack (karpy's extensions, which Karpenter's CRD chart lacks; alpha
    kinds newer than a user's Karpenter CRDs): karpy runs without its CRD, as if the kind had
    no objects, and picks it up once the CRD is installed. Karpenter's v1 kinds are required."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def file_name(self) -> str:
        """Karpenter's file name for this CRD, e.g. `karpenter.sh_nodepools.yaml`."""
        return f"{self.group}_{self.plural}.yaml"

    @cached_property
    def schema(self) -> JSON:
        """The `openAPIV3Schema` of the served version."""
        out = model_schema(self.model)
        props = out["properties"]
        props["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
        props["kind"] = {"description": _KIND_DOC, "type": "string"}
        props["metadata"] = {"type": "object"}
        return out

    def crd(self) -> JSON:
        """The CustomResourceDefinition object."""
        subresources: JSON = {"status": {}}
        if self.scale is not None:
            subresources["scale"] = {
                "specReplicasPath": self.scale[0],
                "statusReplicasPath": self.scale[1],
            }
        names: JSON = {
            "kind": self.kind,
            "listKind": f"{self.kind}List",
            "plural": self.plural,
            "singular": self.singular,
        }
        if self.categories:
            names["categories"] = list(self.categories)
        if self.short_names:
            names["shortNames"] = list(self.short_names)
        version: JSON = {
            "name": self.version,
            "schema": {"openAPIV3Schema": self.schema},
            "served": True,
            "storage": True,
            "subresources": subresources,
        }
        if self.printer_columns:
            version["additionalPrinterColumns"] = [c.to_crd() for c in self.printer_columns]
        metadata: JSON = {"name": self.crd_name}
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": metadata,
            "spec": {
                "group": self.group,
                "names": names,
                "scope": self.scope,
                "versions": [version],
            },
        }

    def admit(self, obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> JSON:
        """Default and validate a raw object as the apiserver would; returns the defaulted copy.

        `old` is the stored object when this is an update; it enables the transition rules
        (immutability and the like).
        """
        if not isinstance(obj, Mapping):
            raise ValidationError(
                kind=self.kind,
                name=None,
                errors=[FieldError("", f"expected an object, got {type(obj).__name__}")],
            )
        errors = self._check_type_meta(obj)
        defaulted, schema_errors = validate(obj, self.schema, old=old)
        errors.extend(schema_errors)
        errors.extend(self._check_scale(defaulted))
        if errors:
            raise ValidationError(kind=self.kind, name=_name_of(obj), errors=errors)
        return defaulted

    def validate(self, obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> M:
        """Admit a raw object and return it as a model."""
        defaulted = self.admit(obj, old=old)
        try:
            return self.model.model_validate(defaulted)
        except pydantic.ValidationError as exc:
            errors = [
                FieldError(_pydantic_path(e["loc"]), e["msg"])
                for e in exc.errors(include_url=False)
            ]
            raise ValidationError(kind=self.kind, name=_name_of(obj), errors=errors) from exc

    def _check_scale(self, obj: JSON) -> list[FieldError]:
        """The scale subresource's replicas must not be negative (checked apart from the schema)."""
        if self.scale is None:
            return []
        node: Any = obj
        for part in self.scale[0].strip(".").split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, int) and not isinstance(node, bool) and node < 0:
            return [
                FieldError(
                    self.scale[0], f"Invalid value: {node}: should be a non-negative integer"
                )
            ]
        return []

    def _check_type_meta(self, obj: Mapping[str, Any]) -> list[FieldError]:
        errors: list[FieldError] = []
        if obj.get("apiVersion") != self.api_version:
            errors.append(
                FieldError(
                    "apiVersion",
                    f"Invalid value: {obj.get('apiVersion')!r}: must be {self.api_version!r}",
                )
            )
        if obj.get("kind") != self.kind:
            errors.append(
                FieldError("kind", f"Invalid value: {obj.get('kind')!r}: must be {self.kind!r}")
            )
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping):
            errors.append(FieldError("metadata.name", "Required value: name is required"))
            return errors
        name, generate_name = metadata.get("name"), metadata.get("generateName")
        if not name and not generate_name:
            errors.append(
                FieldError("metadata.name", "Required value: name or generateName is required")
            )
        elif name and (
            not isinstance(name, str) or len(name) > 253 or not _DNS_SUBDOMAIN.match(name)
        ):
            errors.append(
                FieldError(
                    "metadata.name",
                    f"Invalid value: {name!r}: a lowercase RFC 1123 subdomain must consist of "
                    "lower case alphanumeric characters, '-' or '.', and must start and end "
                    "with an alphanumeric character",
                )
            )
        return errors


def _name_of(obj: Mapping[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        name = metadata.get("name") or metadata.get("generateName")
        return str(name) if name else None
    return None


def _pydantic_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else str(part))
    return out
