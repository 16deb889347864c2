"""End to end: static NodePools (`spec.replicas`, gate `StaticCapacity`) with a real `karpy run`
(kwok provider) on the session control plane.

- replicas 3 gives 3 nodes with no pod at all, `status.nodes` says 3; they are empty and the
  NodePool consolidates at once (`consolidateAfter: 0s`), yet they stay; `kubectl scale` to 1
  removes 2 of them, to 2 adds one.
- `limits.nodes` caps the count below `replicas`.
- Editing the template drifts the nodes: each is replaced from the template, one at a time
  within a one-node budget, and the NodePool never holds more than replicas + 1 NodeClaims.
- A pending pod is never provisioned onto a static NodePool.
- Expired nodes are deleted (forcefully, as Karpenter) and refilled once gone, never beyond
  replicas.
- With the gate off, a static NodePool launches nothing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory
from tests.e2e.support import (
    deployment,
    events,
    kwok_nodeclass,
    nodeclaims,
    nodepool,
    nodes,
    wait_for,
    wait_nodepool_ready,
)

pytestmark = pytest.mark.timeout(600)
JSON = dict[str, Any]
GATE = {"FEATURE_GATES": "StaticCapacity=true"}
POOL = "static"
LABEL = "karpenter.sh/nodepool"


def _static_pool(
    kubectl: Kubectl,
    replicas: int,
    *,
    limits: JSON | None = None,
    budgets: list[JSON] | None = None,
    expire_after: str | None = None,
    ready: bool = True,
) -> None:
    kubectl.apply(kwok_nodeclass(POOL))
    pool = nodepool(
        POOL,
        nodeclass=POOL,
        consolidate_after="0s",
        policy="WhenEmptyOrUnderutilized",
        limits=limits,
        budgets=budgets,
        expire_after=expire_after,
    )
    pool["spec"]["replicas"] = replicas
    kubectl.apply(pool)
    if ready:
        wait_nodepool_ready(kubectl, POOL)


def _claims(kubectl: Kubectl, *, alive: bool = True) -> list[JSON]:
    return [
        c
        for c in nodeclaims(kubectl)
        if (c["metadata"].get("labels") or {}).get(LABEL) == POOL
        and not (alive and c["metadata"].get("deletionTimestamp"))
    ]


def _names(claims: list[JSON]) -> set[str]:
    return {c["metadata"]["name"] for c in claims}


def _wait_count(kubectl: Kubectl, count: int, *, timeout: float = 180.0) -> set[str]:
    """Until the pool has exactly `count` NodeClaims (none deleting) and as many Ready nodes."""

    def check() -> set[str] | None:
        if len(_claims(kubectl, alive=False)) != count:
            return None
        ready = [
            n
            for n in nodes(kubectl, selector=f"{LABEL}={POOL}")
            if not n["metadata"].get("deletionTimestamp")
        ]
        return _names(_claims(kubectl)) if len(ready) == count else None

    found: set[str] = wait_for(check, timeout=timeout, message=f"{count} static nodes")
    return found


def _scale(kubectl: Kubectl, replicas: int) -> None:
    kubectl("scale", f"nodepool/{POOL}", f"--replicas={replicas}")


def _status_nodes(kubectl: Kubectl) -> int:
    pool: JSON = kubectl.json("get", "nodepool", POOL)
    return int((pool.get("status") or {}).get("nodes") or 0)


def test_replicas_keep_nodes_without_pods_and_follow_scaling(
    kubectl: Kubectl, karpy_factory: KarpyFactory
) -> None:
    karpy_factory(GATE)
    _static_pool(kubectl, 3)
    first = _wait_count(kubectl, 3)
    wait_for(lambda: _status_nodes(kubectl) == 3, timeout=60, message="status.nodes == 3")

    # empty nodes of a NodePool consolidating at once: emptiness and consolidation skip them
    time.sleep(25)
    assert _names(_claims(kubectl, alive=False)) == first

    _scale(kubectl, 1)
    kept = _wait_count(kubectl, 1)
    assert kept < first
    wait_for(lambda: _status_nodes(kubectl) == 1, timeout=60, message="status.nodes == 1")

    _scale(kubectl, 2)
    grown = _wait_count(kubectl, 2)
    assert kept < grown
    time.sleep(5)
    assert _names(_claims(kubectl, alive=False)) == grown


def test_node_limit_caps_replicas(kubectl: Kubectl, karpy_factory: KarpyFactory) -> None:
    karpy = karpy_factory(GATE)
    _static_pool(kubectl, 3, limits={"nodes": "2"})
    launched = _wait_count(kubectl, 2)
    time.sleep(10)
    assert _names(_claims(kubectl, alive=False)) == launched
    assert karpy.log_lines("nodepool node limit reached")


def test_pending_pods_do_not_go_to_static_pools(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory
) -> None:
    karpy_factory(GATE)
    _static_pool(kubectl, 1)
    before = _wait_count(kubectl, 1)
    # too big for the static node (kwok types go up to far more; a dynamic pool would launch)
    kubectl.apply(deployment("big", namespace, replicas=1, cpu="30", node_selector={LABEL: POOL}))
    wait_for(
        lambda: events(kubectl, namespace, reason="FailedScheduling"),
        timeout=120,
        message="FailedScheduling for the pod",
    )
    time.sleep(10)
    assert _names(_claims(kubectl, alive=False)) == before


def test_drift_replaces_static_nodes_one_at_a_time(
    kubectl: Kubectl, karpy_factory: KarpyFactory
) -> None:
    karpy_factory(GATE)
    _static_pool(kubectl, 2, budgets=[{"nodes": "1"}])
    old = _wait_count(kubectl, 2)

    most = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            # a transient kubectl failure must not end the watch
            with contextlib.suppress(Exception):
                most[0] = max(most[0], len(_claims(kubectl, alive=False)))
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        kubectl(
            "patch",
            "nodepool",
            POOL,
            "--type=merge",
            "-p",
            '{"spec":{"template":{"metadata":{"labels":{"rollout":"two"}}}}}',
        )

        def replaced() -> set[str] | None:
            claims = _claims(kubectl, alive=False)
            fresh = [
                c for c in claims if (c["metadata"].get("labels") or {}).get("rollout") == "two"
            ]
            return _names(fresh) if len(claims) == 2 and len(fresh) == 2 else None

        new = wait_for(replaced, timeout=360, message="both static nodes replaced")
    finally:
        stop.set()
        watcher.join(timeout=5)
    assert not (new & old)
    assert most[0] <= 3, f"{most[0]} NodeClaims at once: more than one replacement in flight"
    _wait_count(kubectl, 2)


def test_expired_static_nodes_are_refilled(kubectl: Kubectl, karpy_factory: KarpyFactory) -> None:
    karpy = karpy_factory(GATE)
    _static_pool(kubectl, 2, expire_after="40s")
    old = _wait_count(kubectl, 2)

    def refilled() -> set[str] | None:
        claims = _claims(kubectl, alive=False)
        assert len(claims) <= 2, "a node launched for an expired one still there"
        names = _names(claims)
        return names if len(claims) == 2 and not (names & old) else None

    wait_for(refilled, timeout=240, message="both expired static nodes refilled")
    _wait_count(kubectl, 2)
    assert karpy.log_lines("provisioning nodeclaims to satisfy replica count")


def test_gate_off_launches_nothing(kubectl: Kubectl, karpy_factory: KarpyFactory) -> None:
    karpy_factory()
    _static_pool(kubectl, 2)
    time.sleep(15)
    assert _claims(kubectl, alive=False) == []
