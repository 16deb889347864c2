"""Resource descriptors: where a kind lives in the API, so code can say `PODS` or `NODES`.

A `Resource` is plain data (group, version, kind, plural, namespaced); it builds request paths
and object keys. Custom resources (NodeClaims, NodePools, …) are declared the same way by the
packages that own them; this module knows only built-in kinds. A resource marked `optional` may
be missing from a cluster (an extension kind whose CRD is not installed): its informers treat
it as empty instead of waiting for it (`karpy.kube.reflector`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

__all__ = [
    "CSINODES",
    "DAEMONSETS",
    "EVENTS",
    "LEASES",
    "LIMITRANGES",
    "NAMESPACES",
    "NODES",
    "PERSISTENTVOLUMECLAIMS",
    "PERSISTENTVOLUMES",
    "PODDISRUPTIONBUDGETS",
    "PODS",
    "PODTEMPLATES",
    "SERVICES",
    "STORAGECLASSES",
    "VOLUMEATTACHMENTS",
    "Resource",
    "object_key",
    "split_key",
]


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource type, e.g. `Resource("", "v1", "Pod", "pods", namespaced=True)`."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    optional: bool = field(default=False, compare=False)
    """The API server may not serve it (its CRD is not installed): informers then hold it as
    empty and look again periodically. Not part of equality, so every descriptor of one kind
    still shares one informer."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def display(self) -> str:
        """`pods` or `nodeclaims.karpenter.sh`, as kubectl and RBAC name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The REST path for a collection (no name) or an object."""
        if self.namespaced and name is not None and not namespace:
            raise ValueError(f"{self.display} is namespaced: a namespace is required for {name!r}")
        if not self.namespaced and namespace:
            raise ValueError(f"{self.display} is cluster-scoped: namespace must be empty")
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"{self.display}: object name must not be empty")
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return "/".join(parts)


def object_key(obj: dict[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name: str = meta.get("name", "")
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of `object_key`: (namespace or None, name)."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, namespace)


PODS = Resource("", "v1", "Pod", "pods", namespaced=True)
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False)
SERVICES = Resource("", "v1", "Service", "services", namespaced=True)
EVENTS = Resource("", "v1", "Event", "events", namespaced=True)
PERSISTENTVOLUMECLAIMS = Resource(
    "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", namespaced=True
)
PERSISTENTVOLUMES = Resource("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases", namespaced=True)
DAEMONSETS = Resource("apps", "v1", "DaemonSet", "daemonsets", namespaced=True)
PODDISRUPTIONBUDGETS = Resource(
    "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", namespaced=True
)
LIMITRANGES = Resource("", "v1", "LimitRange", "limitranges", namespaced=True)
PODTEMPLATES = Resource("", "v1", "PodTemplate", "podtemplates", namespaced=True)
STORAGECLASSES = Resource("storage.k8s.io", "v1", "StorageClass", "storageclasses", False)
CSINODES = Resource("storage.k8s.io", "v1", "CSINode", "csinodes", namespaced=False)
VOLUMEATTACHMENTS = Resource(
    "storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", namespaced=False
)
