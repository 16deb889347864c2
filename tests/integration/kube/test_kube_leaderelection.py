"""Leader election between real `karpy run` processes on one apiserver.

One scenario, in order: exactly one of two replicas leads; the leader is cut off from the
apiserver (a TCP proxy drops its connections) and stops leading and exits once the renew
deadline passes, while the standby takes over; a graceful SIGTERM of the new leader releases the
lease so the next standby takes over within a few seconds; a `kill -9` of that leader is
survived by the last standby once the lease expires. The Lease lives in the test's namespace.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from controlplane import ControlPlane
from kubetest import Kubectl

from tests.integration.kube.kube_support import KarpyRun, TcpProxy, kubeconfig_variant, wait_for

LEASE = "karpenter-leader-election"


def holder(kubectl: Kubectl, namespace: str) -> str:
    lease = kubectl.json("get", "lease", LEASE, "-n", namespace)
    return str(lease["spec"].get("holderIdentity") or "")


@pytest.mark.slow
def test_one_leader_partition_graceful_handover_and_crash_failover(
    control_plane: ControlPlane,
    kubeconfig: str,
    kubectl: Kubectl,
    namespace: str,
    kube_crds: None,
    tmp_path: Path,
) -> None:
    proxy = TcpProxy(control_plane.server)
    via_proxy = kubeconfig_variant(kubeconfig, tmp_path / "proxy.kubeconfig", server=proxy.url)
    runs: list[KarpyRun] = []

    def replica(name: str, config: str | Path = kubeconfig) -> KarpyRun:
        run = KarpyRun(
            kubeconfig=config,
            log_path=tmp_path / f"{name}.log",
            env={"SYSTEM_NAMESPACE": namespace, "POD_NAME": name},
        )
        runs.append(run.start())
        return run

    timings: dict[str, float] = {}
    try:
        a = replica("a", via_proxy)
        wait_for(lambda: a.leading() is True, timeout=60, what="a to lead")
        b = replica("b")
        wait_for(lambda: b.leading() is False, timeout=60, what="b to stand by")
        time.sleep(5)  # more than two retry periods: b must still not lead
        assert a.leading() is True and b.leading() is False
        assert holder(kubectl, namespace).startswith("a_")

        # a loses the apiserver: it must stop leading (and exit) after the renew deadline
        cut = time.monotonic()
        proxy.cut()
        assert a.wait(45) == 1, a.log()[-3000:]
        timings["partitioned_leader_exit_s"] = time.monotonic() - cut
        assert "leader election lost" in a.log()
        wait_for(lambda: b.leading() is True, timeout=45, what="b to take over")
        timings["partition_takeover_s"] = time.monotonic() - cut
        assert holder(kubectl, namespace).startswith("b_")

        # graceful: SIGTERM releases the lease, c takes over at its next retry
        c = replica("c")
        wait_for(lambda: c.leading() is False, timeout=60, what="c to stand by")
        stopped = time.monotonic()
        b.signal(signal.SIGTERM)
        wait_for(lambda: c.leading() is True, timeout=30, what="c to take over")
        timings["sigterm_handover_s"] = time.monotonic() - stopped
        assert b.wait(30) == 0
        assert "released leader lease" in b.log()

        # crash: kill -9 leaves the lease held until it expires
        d = replica("d")
        wait_for(lambda: d.leading() is False, timeout=60, what="d to stand by")
        killed = time.monotonic()
        c.signal(signal.SIGKILL)
        wait_for(lambda: d.leading() is True, timeout=30, what="d to take over after kill -9")
        timings["kill9_failover_s"] = time.monotonic() - killed
        assert holder(kubectl, namespace).startswith("d_")
    finally:
        for run in runs:
            run.stop()
        proxy.cut()
        print(f"\nleader election timings: {timings}")
    assert timings["sigterm_handover_s"] < timings["kill9_failover_s"]
