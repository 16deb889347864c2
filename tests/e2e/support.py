"""Manifests and waits shared by the end-to-end tests (all through kubectl)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from kubetest import Kubectl, wait_until

from tests import kit
from tests.kit import KWOK_NODECLASS_REF, LINUX_AMD64_ON_DEMAND, kwok_nodeclass

__all__ = [
    "KWOK_NODECLASS_REF",
    "bound_pods",
    "deployment",
    "events",
    "kwok_nodeclass",
    "nodeclaims",
    "nodepool",
    "nodes",
    "pods",
    "scale",
    "wait_bound",
    "wait_for",
    "wait_nodepool_ready",
]

JSON = dict[str, Any]
# The e2e NodePools: linux/amd64/on-demand kwok nodes that never consolidate unless a test asks.
nodepool = partial(kit.nodepool, requirements=LINUX_AMD64_ON_DEMAND, consolidate_after="Never")


def deployment(
    name: str,
    namespace: str,
    *,
    replicas: int,
    cpu: str = "1",
    memory: str = "1Gi",
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    affinity: Mapping[str, Any] | None = None,
    spread: Sequence[Mapping[str, Any]] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> JSON:
    pod_labels = {"app": name, **(labels or {})}
    pod_spec: JSON = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        pod_spec["tolerations"] = list(tolerations)
    if affinity:
        pod_spec["affinity"] = dict(affinity)
    if spread:
        pod_spec["topologySpreadConstraints"] = list(spread)
    template_meta: JSON = {"labels": pod_labels}
    if annotations:
        template_meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def scale(kubectl: Kubectl, namespace: str, name: str, replicas: int) -> None:
    kubectl("scale", f"deployment/{name}", f"--replicas={replicas}", f"--namespace={namespace}")


def pods(kubectl: Kubectl, namespace: str, selector: str | None = None) -> list[JSON]:
    args = ["get", "pods", f"--namespace={namespace}"]
    if selector:
        args.append(f"--selector={selector}")
    items: list[JSON] = kubectl.json(*args)["items"]
    return items


def bound_pods(kubectl: Kubectl, namespace: str, selector: str | None = None) -> list[JSON]:
    return [
        p
        for p in pods(kubectl, namespace, selector)
        if (p.get("spec") or {}).get("nodeName") and not p["metadata"].get("deletionTimestamp")
    ]


def nodeclaims(kubectl: Kubectl) -> list[JSON]:
    items: list[JSON] = kubectl.json("get", "nodeclaims.karpenter.sh")["items"]
    return items


def nodes(kubectl: Kubectl, selector: str | None = "karpenter.sh/nodepool") -> list[JSON]:
    args = ["get", "nodes"]
    if selector:
        args.append(f"--selector={selector}")
    items: list[JSON] = kubectl.json(*args)["items"]
    return items


def events(
    kubectl: Kubectl, namespace: str | None = None, *, reason: str | None = None
) -> list[JSON]:
    args = ["get", "events"]
    args.append(f"--namespace={namespace}" if namespace else "--all-namespaces")
    if reason:
        args.append(f"--field-selector=reason={reason}")
    items: list[JSON] = kubectl.json(*args)["items"]
    return items


def wait_for(
    predicate: Callable[[], Any], *, timeout: float = 120.0, message: str = "condition"
) -> Any:
    return wait_until(predicate, timeout=timeout, interval=0.5, message=message)


def wait_bound(
    kubectl: Kubectl,
    namespace: str,
    count: int,
    *,
    selector: str | None = None,
    timeout: float = 180.0,
) -> list[JSON]:
    """Until at least `count` pods are bound; returns them."""

    def check() -> list[JSON] | None:
        found = bound_pods(kubectl, namespace, selector)
        return found if len(found) >= count else None

    result: list[JSON] = wait_for(
        check, timeout=timeout, message=f"{count} pods bound in {namespace}"
    )
    return result


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c  # type: ignore[no-any-return]
    return None


def wait_nodepool_ready(kubectl: Kubectl, name: str, *, timeout: float = 60.0) -> JSON:
    def check() -> JSON | None:
        pool: JSON = kubectl.json("get", "nodepool", name)
        ready = condition(pool, "Ready")
        return pool if ready is not None and ready.get("status") == "True" else None

    result: JSON = wait_for(check, timeout=timeout, message=f"NodePool {name} Ready")
    return result


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True)[:4000]


def elapsed(start: float) -> float:
    return time.monotonic() - start
