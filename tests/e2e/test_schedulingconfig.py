"""End to end: SchedulingConfigs (karpy's extension) on a running `karpy run` with kwok nodes.

The guard rail of the README's example (amd64 and on-demand for every NodePool of a NodeClass)
holds whatever the NodePool allows, and pods it rules out stay Pending with an event naming
the config; the `default` config's batch window applies to the running controller as soon as
it is edited, without a restart.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
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

pytestmark = pytest.mark.timeout(600)
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


def test_tightening_the_guard_rail_rolls_the_fleet(
    kubectl: Kubectl, namespace: str, karpy: KarpyProcess, kwok_pool: PoolFactory
) -> None:
    """Spot nodes launched before the config are RequirementsDrifted once it asks for
    on-demand, and replaced by on-demand nodes within the NodePool's budget."""
    kwok_pool("default", requirements=OPEN_REQUIREMENTS, budgets=[{"nodes": "1"}])
    one_per_node = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    spot = {CAPACITY_TYPE: "spot", ARCH: "amd64"}
    kubectl.apply(deployment("web", namespace, replicas=2, cpu="500m", affinity=one_per_node))
    wait_bound(kubectl, namespace, 2)
    before = {c["metadata"]["name"] for c in nodeclaims(kubectl)}
    assert all(
        {k: c["metadata"]["labels"].get(k) for k in spot} == spot for c in nodeclaims(kubectl)
    ), "the cheapest nodes are spot"

    kubectl.apply(schedulingconfig())  # amd64 and on-demand from now on
    wait_for(
        lambda: any(
            (c.get("status") or {}).get("conditions")
            and any(
                x["type"] == "Drifted" and x.get("reason") == "RequirementsDrifted"
                for x in c["status"]["conditions"]
            )
            for c in nodeclaims(kubectl)
        ),
        timeout=120,
        message="a spot NodeClaim marked RequirementsDrifted",
    )

    def rolled() -> list[dict[str, Any]] | None:
        claims = [c for c in nodeclaims(kubectl) if not c["metadata"].get("deletionTimestamp")]
        names = {c["metadata"]["name"] for c in claims}
        return claims if len(claims) == 2 and not names & before else None

    claims = wait_for(rolled, timeout=400, message="both spot nodes replaced")
    for claim in claims:
        assert claim["metadata"]["labels"][CAPACITY_TYPE] == "on-demand"
    bound = wait_bound(kubectl, namespace, 2, selector="app=web")
    on = {p["spec"]["nodeName"] for p in bound}
    assert on <= {c["status"].get("nodeName") for c in claims}
