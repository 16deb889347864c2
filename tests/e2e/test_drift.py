"""End to end: drift with a real `karpy run` (kwok provider) on the session control plane.

- Editing the NodePool template (a label) drifts its nodes (`NodePoolDrifted`); each is replaced:
  its replacement NodeClaim is Initialized before the old NodeClaim starts deleting, one node at
  a time under a one-node budget, and the pods end on the new nodes.
- Changing the KWOKNodeClass drifts the nodes launched from it (`NodeClassDrift`).
- A replacement that never registers (the fault plan `never-register`) is deleted by the
  registration timeout; the command fails: the old node loses its taint and `DisruptionReason`
  and stays.
- kill -9 of karpy after it launched a replacement: the next karpy adopts the persisted command,
  waits for the replacement and deletes the old node; no second replacement is launched.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubetest import Kubectl

from karpy.cloudprovider.faults import ENV_VAR
from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import (
    ClaimWatcher,
    condition,
    deployment,
    kwok_nodeclass,
    nodeclaims,
    nodepool,
    one_per_node,
    pool_nodes,
    tainted,
    wait_bound,
    wait_for,
    wait_pool_nodes,
)

pytestmark = pytest.mark.timeout(600)
JSON = dict[str, Any]
POOL = "drift"
APP = "drifty"
REPLACEMENT_FOR = "karpy.sh/disruption-replacement-for"


def _is_true(obj: JSON, type_: str) -> bool:
    found = condition(obj, type_)
    return found is not None and found.get("status") == "True"


def _claims(kubectl: Kubectl) -> list[JSON]:
    return [
        c
        for c in nodeclaims(kubectl)
        if c["metadata"]["labels"].get("karpenter.sh/nodepool") == POOL
    ]


def _without(claims: list[JSON], names: set[str]) -> list[JSON] | None:
    """`claims` once none of `names` is among them."""
    return None if any(c["metadata"]["name"] in names for c in claims) else claims


def _live(kubectl: Kubectl) -> set[str]:
    return {
        c["metadata"]["name"]
        for c in _claims(kubectl)
        if not c["metadata"].get("deletionTimestamp")
    }


def _start_two(kubectl: Kubectl, namespace: str, kwok_pool: PoolFactory, **pool: Any) -> set[str]:
    kwok_pool(POOL, budgets=[{"nodes": "1"}], **pool)
    kubectl.apply(deployment(APP, namespace, replicas=2, cpu="500m", affinity=one_per_node(APP)))
    wait_bound(kubectl, namespace, 2, timeout=180)
    found: set[str] = wait_for(
        lambda: (
            len(live := _live(kubectl)) == 2
            and all(_is_true(c, "Initialized") for c in _claims(kubectl))
            and live
        ),
        timeout=120,
        message="two initialized nodes",
    )
    return found


def _wait_replaced(kubectl: Kubectl, watcher: ClaimWatcher, original: set[str]) -> None:
    """Until two live NodeClaims remain, none of them `original`, and the watcher has recorded
    each original one deleting (its ordering check reads those times)."""
    wait_for(
        lambda: (
            len(live := _live(kubectl)) == 2
            and not (live & original)
            and watcher.saw_deleting(original)
        ),
        timeout=300,
        message="both drifted nodes replaced",
    )


def _assert_replaced_in_order(watcher: ClaimWatcher, original: set[str]) -> None:
    new = [n for n in watcher.initialized if n not in original]
    assert len(new) >= 2, (watcher.initialized, original)
    for old in original:
        assert old in watcher.deleting, f"{old} never deleted"
        ready_before = [n for n in new if watcher.initialized[n] <= watcher.deleting[old]]
        assert ready_before, f"{old} started deleting before any replacement was initialized"


def test_nodepool_template_edit_replaces_nodes_after_their_replacements_initialize(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    original = _start_two(kubectl, namespace, kwok_pool)
    with ClaimWatcher(kubectl) as watcher:
        kubectl.apply(
            nodepool(POOL, nodeclass=POOL, budgets=[{"nodes": "1"}], labels={"team": "blue"})
        )
        wait_for(
            lambda: any(
                (condition(c, "Drifted") or {}).get("reason") == "NodePoolDrifted"
                for c in _claims(kubectl)
            ),
            timeout=120,
            message="a NodeClaim marked Drifted (NodePoolDrifted)",
        )
        _wait_replaced(kubectl, watcher, original)
        wait_bound(kubectl, namespace, 2, timeout=120)
    _assert_replaced_in_order(watcher, original)
    by_start = sorted(watcher.deleting[o] for o in original)
    assert by_start[1] - by_start[0] > 0.5, "the one-node budget let both go at once"
    settled = wait_pool_nodes(kubectl, POOL, 2)
    for n in settled:
        assert n["metadata"]["labels"].get("team") == "blue"
        assert not tainted(n)
    drifted = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_nodeclaims_disrupted_total" and s.labels.get("reason") == "drifted"
    ]
    assert sum(s.value for s in drifted) == 2
    decisions = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_voluntary_disruption_decisions_total"
        and s.labels.get("reason") == "drifted"
        and s.labels.get("decision") == "replace"
    ]
    assert sum(s.value for s in decisions) == 2


def test_kwoknodeclass_change_drifts_and_replaces_its_nodes(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    original = _start_two(kubectl, namespace, kwok_pool)
    with ClaimWatcher(kubectl) as watcher:
        changed = kwok_nodeclass(POOL)
        changed["spec"]["maxPods"] = 50
        kubectl.apply(changed)
        wait_for(
            lambda: any(
                (condition(c, "Drifted") or {}).get("reason") == "NodeClassDrift"
                for c in _claims(kubectl)
            ),
            timeout=120,
            message="a NodeClaim marked Drifted (NodeClassDrift)",
        )
        _wait_replaced(kubectl, watcher, original)
    _assert_replaced_in_order(watcher, original)
    remaining = wait_for(
        lambda: _without(_claims(kubectl), original),
        timeout=120,
        message="the old NodeClaims gone",
    )
    for c in remaining:
        assert condition(c, "Drifted") is None, c["metadata"]["name"]


def test_replacement_that_never_registers_is_rolled_back(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    first = karpy_factory()
    original = _start_two(kubectl, namespace, kwok_pool)
    first.stop()
    # From now on no launch registers; the registration timeout deletes the replacement.
    karpy = karpy_factory({ENV_VAR: "never-register", "REGISTRATION_TIMEOUT": "40s"})
    kubectl.apply(nodepool(POOL, nodeclass=POOL, budgets=[{"nodes": "1"}], labels={"team": "red"}))
    wait_for(
        lambda: karpy.log_lines("failed terminating nodes while executing a disruption command"),
        timeout=240,
        message="the command failed",
    )
    # No further attempt: a budget of zero (budgets are not part of the template hash).
    kubectl.apply(nodepool(POOL, nodeclass=POOL, budgets=[{"nodes": "0"}], labels={"team": "red"}))
    wait_for(
        lambda: (
            not any(tainted(n) for n in pool_nodes(kubectl, POOL))
            and all(
                condition(c, "DisruptionReason") is None
                for c in _claims(kubectl)
                if c["metadata"]["name"] in original
            )
        ),
        timeout=180,
        message="taint and DisruptionReason removed",
    )
    assert original <= _live(kubectl)
    failures = [
        s
        for s in karpy.metrics()
        if s.name == "karpenter_voluntary_disruption_queue_failures_total" and s.value > 0
    ]
    assert failures, "no queue failure counted"


def test_kill_9_mid_command_the_next_karpy_finishes_it(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    karpy = karpy_factory()
    original = _start_two(kubectl, namespace, kwok_pool)
    # New instances take 25 s to register: time to kill karpy while it waits.
    slow = kwok_nodeclass(POOL, delay="25s")
    with ClaimWatcher(kubectl) as watcher:
        kubectl.apply(slow)  # also drifts the nodes (NodeClassDrift)
        wait_for(
            lambda: karpy.log_lines("created replacement nodeclaim"),
            timeout=180,
            message="a replacement launched",
        )
        karpy.kill()
        marked = [n["metadata"]["name"] for n in pool_nodes(kubectl, POOL) if tainted(n)]
        assert len(marked) == 1, marked
        karpy.start()
        karpy.wait_ready()
        wait_for(
            lambda: marked[0] not in _live(kubectl) and watcher.saw_deleting(marked),
            timeout=240,
            message="the next karpy deletes the old node",
        )
        assert karpy.log_lines("resuming a disruption command")
    replacements: dict[str, list[str]] = {}
    for name, notes in watcher.annotations.items():
        if REPLACEMENT_FOR in notes:
            replacements.setdefault(notes[REPLACEMENT_FOR], []).append(name)
    assert replacements and all(len(v) == 1 for v in replacements.values()), replacements
    assert marked[0] in watcher.deleting
    first_command = next(n for names in replacements.values() for n in names)
    assert len(original) == 2
    assert watcher.initialized.get(first_command, float("inf")) <= watcher.deleting[marked[0]]
