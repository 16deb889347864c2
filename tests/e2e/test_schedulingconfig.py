"""End to end: SchedulingConfigs (karpy's extension) on a running `karpy run` with kwok nodes.

The guard rail of the README's example (amd64 and on-demand for every NodePool of a NodeClass)
holds whatever the NodePool allows, and pods it rules out stay Pending with an event naming
the config; the `default` config's batch window applies to the running controller as soon as
it is edited, without a restart.
"""

from __future__ import annotations

import time
from typing import Any

from kubetest import Kubectl

from tests.e2e.conftest import PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import (
    bound_pods,
    deployment,
    events,
    nodeclaims,
    nodes,
    pods,
    wait_bound,
    wait_for,
)
from tests.kit import LINUX, schedulingconfig

ARCH = "kubernetes.io/arch"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
OPEN_REQUIREMENTS = [
    *LINUX,
    {"key": ARCH, "operator": "In", "values": ["amd64", "arm64"]},
    {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]},
]


def _config_ready(kubectl: Kubectl, name: str) -> dict[str, Any]:
    """Until karpy has written the config's status for its current generation."""

    def check() -> dict[str, Any] | None:
        config: dict[str, Any] = kubectl.json("get", "schedulingconfigs.karpenter.sh", name)
        status = config.get("status") or {}
        ready = [c for c in status.get("conditions") or () if c["type"] == "Ready"]
        current = status.get("observedGeneration") == config["metadata"]["generation"]
        return config if current and ready and ready[0]["status"] == "True" else None

    found: dict[str, Any] = wait_for(check, timeout=60, message=f"SchedulingConfig {name} Ready")
    return found


def test_guard_rail_keeps_arm64_pending_and_amd64_on_demand(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default", requirements=OPEN_REQUIREMENTS)
    kubectl.apply(schedulingconfig())  # amd64 and on-demand on the KWOKNodeClass `default`
    config = _config_ready(kubectl, "default")
    assert config["status"]["nodePools"] == ["default"]

    kubectl.apply(deployment("amd", namespace, replicas=3, cpu="1", node_selector={ARCH: "amd64"}))
    kubectl.apply(deployment("arm", namespace, replicas=2, cpu="1", node_selector={ARCH: "arm64"}))
    wait_bound(kubectl, namespace, 3, selector="app=amd")

    def config_named() -> list[dict[str, Any]] | None:
        found = [
            e
            for e in events(kubectl, namespace, reason="FailedScheduling")
            if e["involvedObject"]["name"].startswith("arm-")
            and 'SchedulingConfig "default"' in (e.get("message") or "")
        ]
        return found or None

    named = wait_for(config_named, timeout=90, message="a FailedScheduling event naming the config")
    assert ARCH in named[0]["message"]

    launched = nodes(kubectl)
    assert launched
    for node in launched:
        labels = node["metadata"]["labels"]
        assert (labels[ARCH], labels[CAPACITY_TYPE]) == ("amd64", "on-demand"), labels
    for claim in nodeclaims(kubectl):
        labels = claim["metadata"]["labels"]
        assert labels[CAPACITY_TYPE] == "on-demand", labels
    arm = pods(kubectl, namespace, "app=arm")
    assert len(arm) == 2
    assert not bound_pods(kubectl, namespace, "app=arm")


def _seconds_to_new_claim(kubectl: Kubectl, namespace: str, name: str, before: int) -> float:
    """Create a one-pod Deployment and time how long until a new NodeClaim exists."""
    kubectl.apply(deployment(name, namespace, replicas=1, cpu="3", memory="1Gi"))
    started = time.monotonic()
    wait_for(
        lambda: len(nodeclaims(kubectl)) > before,
        timeout=180,
        message=f"a NodeClaim for {name}",
    )
    return time.monotonic() - started


def test_editing_the_batch_window_applies_without_restart(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    kwok_pool("default")
    # karpy runs with the settings' 1 s idle / 10 s maximum window; the config overrides it.
    window = {"batchIdleDuration": "30s", "batchMaxDuration": "60s"}
    kubectl.apply(schedulingconfig(nodeclass=None, requirements=[], **window))
    _config_ready(kubectl, "default")
    slow = _seconds_to_new_claim(kubectl, namespace, "slow", before=0)
    # The batch stays open 30 s after the pod's trigger: nothing can launch before that.
    assert slow >= 25, f"NodeClaim after {slow:.1f}s with a 30s idle window"

    kubectl(
        "patch", "schedulingconfigs.karpenter.sh", "default", "--type=merge",
        "--patch", '{"spec": {"batchIdleDuration": "1s", "batchMaxDuration": "2s"}}',
    )  # fmt: skip
    _config_ready(kubectl, "default")
    fast = _seconds_to_new_claim(kubectl, namespace, "fast", before=len(nodeclaims(kubectl)))
    assert fast < 20, f"NodeClaim after {fast:.1f}s with a 1s idle window"
    wait_bound(kubectl, namespace, 2)
