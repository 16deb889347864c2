"""End to end: a live fleet changes hands between Karpenter's own controller and karpy, and
nothing is replaced because the controller changed (issue 29).

Karpenter is the real thing: the `kwok` main package of sigs.k8s.io/karpenter at the version in
hack/karpenter/VERSION, built from the Go module proxy by hack/karpenter/build.sh (`make
binaries` builds it; the fixture reuses the cached binary). Its kwok provider creates each Node
itself, annotated `kwok.x-k8s.io/node: fake`, and leaves the kubelet's part to a kwok controller.
Here karpy's kwok simulator plays those kubelets, in the test process (`Kubelets` with
`FleetMachines`): it makes the Nodes Ready, renews their Leases and runs their pods, while the
Nodes are Karpenter's or while no karpy runs. A `karpy run` started meanwhile plays them itself
(its simulator then renews the Leases the test's simulator wrote, which stands back).

- Karpenter provisions 20 one-CPU pods on three c-8x nodes of a NodePool that consolidates
  `WhenEmptyOrUnderutilized` after 30 s; it is stopped and `karpy run` starts. For three minutes
  no NodeClaim is deleted or marked Drifted and every pod stays on its node; then the pods scale
  to 0 and karpy removes Karpenter's nodes as empty.
- The reverse: karpy provisions, stops; Karpenter takes over with the same three-minute hold and
  then removes karpy's nodes as empty.

The NodePool allows only c-8x nodes, full with seven pods each, so no consolidation is possible
while the pods run: any NodeClaim deleted during the hold is a verdict of the new controller
about the old one's objects (drift from a hash or hash version read differently, a label, an
annotation or a finalizer it does not know).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubetest import Kubectl

from karpy.cloudprovider.kwok.instances import (
    ANNOTATION_KWOK_NODE,
    KWOK_NODE_FAKE,
    PROVIDER_ID_PREFIX,
    node_name_of,
)
from karpy.cloudprovider.kwok.machines import Registration
from karpy.kube import Client
from tests.e2e.aws_kubelets import Kubelets
from tests.e2e.conftest import KarpyFactory
from tests.e2e.karpy_process import REPO, free_port
from tests.e2e.support import (
    ClaimWatcher,
    condition,
    deployment,
    kwok_nodeclass,
    nodeclaims,
    nodepool,
    pods,
    scale,
    wait_for,
)

pytestmark = pytest.mark.timeout(1200)
JSON = dict[str, Any]
POOL = "takeover"
APP = "fleet"
PODS = 20
NODES = 3
HOLD = 180.0
"""Issue 29: three minutes in which the new controller replaces nothing."""
TYPE = "c-8x-amd64-linux"
HASH_ANNOTATIONS = ("karpenter.sh/nodepool-hash", "karpenter.sh/nodepool-hash-version")
BUILD = REPO / "hack" / "karpenter" / "build.sh"


class FleetMachines:
    """kwok instances whose Nodes their provider creates (Karpenter's kwok provider, or
    karpy's): the simulator plays their kubelets but registers no Node itself."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.errors: list[str] = []

    def serves(self, provider_id: str) -> bool:
        return provider_id.startswith(PROVIDER_ID_PREFIX)

    def node_name(self, provider_id: str) -> str | None:
        return node_name_of(provider_id)

    async def registration(self, claim: Mapping[str, Any]) -> Registration:
        return Registration(annotations={ANNOTATION_KWOK_NODE: KWOK_NODE_FAKE})

    async def create_node(self, node: JSON) -> None:
        return None


@dataclass
class KarpenterProcess:
    """Karpenter's kwok controller as a subprocess on the local control plane (leader
    election off, as karpy's e2e processes run; loopback ports chosen at random)."""

    binary: Path
    kubeconfig: str
    log_path: Path
    metrics_port: int = field(default_factory=free_port)
    probe_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> KarpenterProcess:
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")},
            "KUBECONFIG": self.kubeconfig,
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(self.metrics_port),
            "HEALTH_PROBE_PORT": str(self.probe_port),
            "LOG_LEVEL": "debug",
        }
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                ["nice", "-n", "10", str(self.binary)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"Karpenter exited with {self.proc.returncode}:\n{self.tail()}"
                )
            with contextlib.suppress(OSError):
                url = f"http://127.0.0.1:{self.probe_port}/readyz"
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return self
            time.sleep(0.5)
        raise AssertionError(f"Karpenter not ready after 120 s:\n{self.tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@pytest.fixture(scope="session")
def karpenter_binary() -> Path:
    """Karpenter's kwok controller, built once per machine (hack/karpenter/build.sh)."""
    result = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"building Karpenter's kwok controller failed:\n{result.stderr}", pytrace=False)
    return Path(result.stdout.strip().splitlines()[-1])


@pytest.fixture
def karpenter(
    karpenter_binary: Path, kubeconfig: str, tmp_path: Path, crds: None, clean_cluster: None
) -> Iterator[KarpenterProcess]:
    """Karpenter's controller, not started; stopped after the test (before the cleanup)."""
    process = KarpenterProcess(karpenter_binary, kubeconfig, tmp_path / "karpenter.log")
    try:
        yield process
    finally:
        process.stop()
        print(f"Karpenter log ({process.log_path}):\n{process.tail(40)}")


def _fleet(kubectl: Kubectl, namespace: str) -> None:
    kubectl.apply(kwok_nodeclass(POOL))
    kubectl.apply(
        nodepool(
            POOL,
            nodeclass=POOL,
            policy="WhenEmptyOrUnderutilized",
            consolidate_after="30s",
            # All empty nodes in one command (the default 10% of 3 is one node at a time).
            budgets=[{"nodes": "100%"}],
            requirements=[
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [TYPE]},
            ],
        )
    )
    kubectl.apply(deployment(APP, namespace, replicas=PODS, cpu="1", memory="1Gi"))


def _placement(kubectl: Kubectl, namespace: str) -> dict[str, str]:
    """Pod name -> node name, of the running, bound pods."""
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in pods(kubectl, namespace, f"app={APP}")
        if (p.get("spec") or {}).get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
        and (condition(p, "Ready") or {}).get("status") == "True"
    }


def _provisioned(kubectl: Kubectl, namespace: str) -> dict[str, str]:
    """Until the 20 pods run on NODES initialized NodeClaims; their placement."""

    def check() -> dict[str, str] | None:
        claims = nodeclaims(kubectl)
        initialized = [
            c for c in claims if (condition(c, "Initialized") or {}).get("status") == "True"
        ]
        placement = _placement(kubectl, namespace)
        if len(placement) == PODS and len(claims) == NODES == len(initialized):
            return placement
        return None

    result: dict[str, str] = wait_for(
        check, timeout=300, message=f"{PODS} pods Ready on {NODES} initialized NodeClaims"
    )
    return result


def _hold(kubectl: Kubectl, namespace: str, placement: dict[str, str]) -> None:
    """For HOLD seconds: no NodeClaim deleted, none Drifted, every pod on its node."""
    names = {c["metadata"]["name"] for c in nodeclaims(kubectl)}
    end = time.monotonic() + HOLD
    with ClaimWatcher(kubectl) as watcher:
        while time.monotonic() < end:
            claims = nodeclaims(kubectl)
            drifted = [
                c["metadata"]["name"]
                for c in claims
                if (condition(c, "Drifted") or {}).get("status") == "True"
            ]
            assert not drifted, f"marked Drifted after the takeover: {drifted}"
            assert {c["metadata"]["name"] for c in claims} == names, (
                f"NodeClaims changed: {names} -> {[c['metadata']['name'] for c in claims]}"
            )
            now = _placement(kubectl, namespace)
            moved = {pod: node for pod, node in placement.items() if now.get(pod) != node}
            assert not moved, f"pods no longer Ready on their nodes: {moved}"
            time.sleep(5)
    assert not watcher.deleting, f"NodeClaims deleted after the takeover: {watcher.deleting}"
    # The new controller's NodePool hash (and its version) is the old one's: the NodeClaims'
    # annotations still match it.
    pool = kubectl.json("get", "nodepool", POOL)["metadata"].get("annotations") or {}
    for claim in nodeclaims(kubectl):
        stamped = claim["metadata"].get("annotations") or {}
        for key in HASH_ANNOTATIONS:
            name = claim["metadata"]["name"]
            assert pool.get(key) and stamped.get(key) == pool.get(key), (key, name, stamped, pool)


def _emptied(kubectl: Kubectl, namespace: str) -> None:
    """Scale to 0; until the NodePool's NodeClaims and Nodes are gone."""
    scale(kubectl, namespace, APP, 0)
    wait_for(
        lambda: (
            not nodeclaims(kubectl)
            and not kubectl.json("get", "nodes", f"--selector=karpenter.sh/nodepool={POOL}")[
                "items"
            ]
        ),
        timeout=360,
        message="the empty nodes removed",
    )


def test_karpy_takes_over_karpenters_fleet_and_replaces_nothing(
    kubectl: Kubectl,
    kubeconfig: str,
    namespace: str,
    karpenter: KarpenterProcess,
    karpy_factory: KarpyFactory,
) -> None:
    with Kubelets(kubeconfig, machines=FleetMachines) as kubelets:
        karpenter.start()
        _fleet(kubectl, namespace)
        placement = _provisioned(kubectl, namespace)
        karpenter.stop()
        karpy = karpy_factory()
        _hold(kubectl, namespace, placement)
        assert not kubelets.errors, kubelets.errors
    _emptied(kubectl, namespace)
    assert karpy.running, karpy.log_tail()


def test_karpenter_takes_back_karpys_fleet_and_replaces_nothing(
    kubectl: Kubectl,
    kubeconfig: str,
    namespace: str,
    karpenter: KarpenterProcess,
    karpy_factory: KarpyFactory,
) -> None:
    karpy = karpy_factory()
    _fleet(kubectl, namespace)
    placement = _provisioned(kubectl, namespace)
    karpy.stop()
    # The kubelets of karpy's Nodes, from now on: karpy's simulator has stopped with it.
    with Kubelets(kubeconfig, machines=FleetMachines) as kubelets:
        karpenter.start()
        _hold(kubectl, namespace, placement)
        _emptied(kubectl, namespace)
        assert not kubelets.errors, kubelets.errors
