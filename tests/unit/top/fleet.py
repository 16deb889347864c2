"""A small fleet as the watches would deliver it: NodePool `web` (karpy's `status.cost` on it)
with two kwok nodes, NodePool `batch` with one spot node that drifted and expires soon, a
NodeClaim of `batch` still launching, and a node without a NodePool."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubetest import node_status

from tests.kit import node, nodeclaim, nodepool, pod, ready_claim_conditions

JSON = dict[str, Any]
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CREATED = "2026-03-01T10:00:00Z"
C4 = "c-4x-amd64-linux"
C4_ON_DEMAND = 0.10859
"""The kwok catalogue's hourly price of c-4x-amd64-linux on demand (in any zone)."""


def managed(
    name: str,
    pool: str,
    *,
    instance_type: str = C4,
    capacity_type: str = "on-demand",
    zone: str = "test-zone-a",
    conditions: list[JSON] | None = None,
    expire_after: str | None = None,
    with_node: bool = True,
) -> list[tuple[str, JSON]]:
    """(kind plural, object) of a launched NodeClaim and (unless `with_node` is false) its
    registered Ready Node with 4 CPUs and 16 GiB allocatable."""
    labels = {
        "node.kubernetes.io/instance-type": instance_type,
        "karpenter.sh/capacity-type": capacity_type,
        "topology.kubernetes.io/zone": zone,
    }
    claim = nodeclaim(
        name,
        pool=pool,
        labels=labels,
        status={
            "providerID": f"kwok://{name}",
            "nodeName": name,
            "conditions": ready_claim_conditions(CREATED) + (conditions or []),
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        },
    )
    claim["metadata"]["creationTimestamp"] = CREATED
    if expire_after:
        claim["spec"]["expireAfter"] = expire_after
    out = [("nodeclaims", claim)]
    if with_node:
        n = node(
            name,
            provider_id=f"kwok://{name}",
            labels={
                **labels,
                "karpenter.sh/nodepool": pool,
                "karpenter.sh/registered": "true",
                "karpenter.sh/initialized": "true",
            },
            status=node_status(ready=True, cpu="4", memory="16Gi"),
        )
        n["metadata"]["creationTimestamp"] = CREATED
        out.append(("nodes", n))
    return out


def worker(name: str, cpu: str, node_name: str) -> tuple[str, JSON]:
    return "pods", pod(name, "default", node=node_name, requests={"cpu": cpu, "memory": "1Gi"})


def fleet_objects() -> list[tuple[str, JSON]]:
    web = nodepool("web")
    web["status"] = {"cost": "0.3"}
    drifted = {
        "type": "Drifted",
        "status": "True",
        "reason": "NodePoolDrifted",
        "message": "",
        "lastTransitionTime": CREATED,
    }
    loose = node(
        "loose",
        labels={
            "node.kubernetes.io/instance-type": C4,
            "karpenter.sh/capacity-type": "on-demand",
            "topology.kubernetes.io/zone": "somewhere-else",
        },
        status=node_status(ready=False, cpu="4", memory="16Gi"),
    )
    loose["metadata"]["creationTimestamp"] = "2026-02-27T12:00:00Z"
    return [
        ("nodepools", web),
        ("nodepools", nodepool("batch")),
        *managed("web-a", "web"),
        *managed("web-b", "web", zone="test-zone-b"),
        *managed(
            "batch-a",
            "batch",
            capacity_type="spot",
            conditions=[drifted],
            expire_after="3h",
        ),
        *managed("batch-b", "batch", with_node=False),
        ("nodes", loose),
        worker("w1", "2", "web-a"),
        worker("w2", "1", "web-a"),
        worker("w3", "500m", "web-b"),
        worker("b1", "3", "batch-a"),
    ]
