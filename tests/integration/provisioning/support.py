"""Objects for the provisioning integration tests."""

from __future__ import annotations

import json
from typing import Any

from kubetest import Kubectl

JSON = dict[str, Any]


def nodeclass(name: str = "default", *, delay: str | None = None) -> JSON:
    spec: JSON = {"nodeRegistrationDelay": delay} if delay else {}
    return {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def nodeclaim(name: str, *, nodeclass_name: str = "default", cpu: str = "1") -> JSON:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "pool"}},
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": nodeclass_name,
            },
            "requirements": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            ],
            "resources": {"requests": {"cpu": cpu, "memory": "1Gi", "pods": "1"}},
            "startupTaints": [{"key": "example.com/agent", "effect": "NoSchedule"}],
        },
    }


def condition(obj: JSON | None, type_: str) -> str | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return str(c.get("status"))
    return None


def set_ready(
    kubectl: Kubectl, kind: str, name: str, *, ready: bool = True, reason: str = "Ready"
) -> None:
    """Write an object's Ready condition through its status subresource, as its controller
    would."""
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": reason,
        "message": "" if ready else reason.lower(),
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    kubectl(
        "patch",
        kind,
        name,
        "--subresource=status",
        "--type=merge",
        "--patch",
        json.dumps({"status": {"conditions": [condition]}}),
    )
