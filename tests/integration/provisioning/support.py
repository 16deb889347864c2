"""Objects for the provisioning integration tests."""

from __future__ import annotations

import json
from typing import Any

from kubetest import Kubectl

from tests.kit import LINUX_AMD64_ON_DEMAND, kwok_nodeclass
from tests.kit import nodeclaim as kit_nodeclaim

JSON = dict[str, Any]


def nodeclass(name: str = "default", *, delay: str | None = None) -> JSON:
    return kwok_nodeclass(name, delay=delay or None)


def nodeclaim(name: str, *, nodeclass_name: str = "default", cpu: str = "1") -> JSON:
    """A claim the provisioner could have made: linux/amd64/on-demand, with a startup taint."""
    return kit_nodeclaim(
        name,
        nodeclass=nodeclass_name,
        requirements=LINUX_AMD64_ON_DEMAND,
        requests={"cpu": cpu, "memory": "1Gi", "pods": "1"},
        startup_taints=[{"key": "example.com/agent", "effect": "NoSchedule"}],
    )


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
