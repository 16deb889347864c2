"""End to end: karpy on a cluster with Karpenter's v1 CRDs only (no SchedulingConfig CRD, as
Karpenter's karpenter-crd chart installs them, no alpha NodeOverlay CRD, and no CapacityBuffer
CRD although its gate is on) provisions as before, says once per missing CRD how to install
it, and applies SchedulingConfigs once their CRD is installed, without a restart.

The test deletes the session's SchedulingConfig, NodeOverlay and CapacityBuffer CRDs and puts
them back in a `finally`, so the tests after it find them as the session fixture left them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import (
    bound_pods,
    deployment,
    events,
    nodeclaims,
    nodes,
    wait_bound,
    wait_for,
)
from tests.kit import LINUX, schedulingconfig

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[2]
CRD = "schedulingconfigs.karpenter.sh"
OVERLAY_CRD = "nodeoverlays.karpenter.sh"
BUFFER_CRD = "capacitybuffers.autoscaling.x-k8s.io"
CRD_FILES = {
    CRD: REPO / "manifests" / "crds" / "karpenter.sh_schedulingconfigs.yaml",
    OVERLAY_CRD: REPO / "manifests" / "crds" / "karpenter.sh_nodeoverlays.yaml",
    BUFFER_CRD: REPO / "manifests" / "crds" / "autoscaling.x-k8s.io_capacitybuffers.yaml",
}
ARCH = "kubernetes.io/arch"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
OPEN_REQUIREMENTS = [
    *LINUX,
    {"key": ARCH, "operator": "In", "values": ["amd64", "arm64"]},
    {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]},
]


def _install_crd(kubectl: Kubectl, name: str) -> None:
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_FILES[name]))
    kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s", timeout=90)


def _log_records(process: KarpyProcess) -> list[dict[str, Any]]:
    records = []
    for line in process.log_text().splitlines():
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records


def _absent_lines(process: KarpyProcess, crd: str = CRD) -> list[dict[str, Any]]:
    return [
        r
        for r in _log_records(process)
        if r.get("crd") == crd and "is not served" in str(r.get("message", ""))
    ]


def test_without_the_schedulingconfig_crd_karpy_provisions_and_picks_it_up_later(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    for name in CRD_FILES:
        kubectl("delete", "crd", name, "--ignore-not-found", "--wait=true", timeout=120)
    try:
        assert not kubectl.has_resource(CRD)
        assert not kubectl.has_resource(OVERLAY_CRD)
        assert not kubectl.has_resource(BUFFER_CRD)
        # ready: every informer synced, the missing kinds included (Cluster Autoscaler's
        # CapacityBuffer CRD is absent from Karpenter's charts: its gate alone must not stall)
        karpy = karpy_factory({"FEATURE_GATES": "CapacityBuffer=true"})
        kwok_pool("default", requirements=OPEN_REQUIREMENTS)

        # As before: nothing rules arm64 out.
        kubectl.apply(
            deployment("arm", namespace, replicas=1, cpu="1", node_selector={ARCH: "arm64"})
        )
        wait_bound(kubectl, namespace, 1, selector="app=arm")
        lines = _absent_lines(karpy)
        assert len(lines) == 1, lines
        assert lines[0]["level"] == "INFO"
        assert "karpy-crd" in lines[0]["message"]
        assert "karpy crds" in lines[0]["message"]
        assert len(_absent_lines(karpy, OVERLAY_CRD)) == 1
        assert len(_absent_lines(karpy, BUFFER_CRD)) == 1

        # The CRD arrives: the next re-check (each minute) picks the kind up.
        _install_crd(kubectl, CRD)
        kubectl.apply(schedulingconfig())  # amd64 and on-demand on the KWOKNodeClass `default`

        def config_ready() -> bool:
            config = kubectl.json("get", CRD, "default")
            status = config.get("status") or {}
            ready = [c for c in status.get("conditions") or () if c["type"] == "Ready"]
            return bool(ready) and ready[0]["status"] == "True"

        wait_for(config_ready, timeout=180, message="the SchedulingConfig Ready")
        assert karpy.log_lines("optional resource now served")
        assert len(_absent_lines(karpy)) == 1  # said once, not at every re-check

        before = {c["metadata"]["name"] for c in nodeclaims(kubectl)}
        kubectl.apply(
            deployment("arm2", namespace, replicas=1, cpu="1", node_selector={ARCH: "arm64"})
        )
        kubectl.apply(
            deployment("amd", namespace, replicas=1, cpu="1", node_selector={ARCH: "amd64"})
        )
        wait_bound(kubectl, namespace, 1, selector="app=amd")

        def config_named() -> list[dict[str, Any]] | None:
            found = [
                e
                for e in events(kubectl, namespace, reason="FailedScheduling")
                if e["involvedObject"]["name"].startswith("arm2-")
                and 'SchedulingConfig "default"' in (e.get("message") or "")
            ]
            return found or None

        wait_for(config_named, timeout=90, message="a FailedScheduling event naming the config")
        assert not bound_pods(kubectl, namespace, "app=arm2")
        new = [c for c in nodeclaims(kubectl) if c["metadata"]["name"] not in before]
        assert new
        for claim in new:
            labels = claim["metadata"]["labels"]
            assert (labels[ARCH], labels[CAPACITY_TYPE]) == ("amd64", "on-demand"), labels
        assert any(n["metadata"]["labels"][ARCH] == "arm64" for n in nodes(kubectl))
    finally:
        for name in CRD_FILES:
            _install_crd(kubectl, name)
