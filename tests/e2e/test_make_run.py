"""`make run` against an existing cluster: `hack/run.py` (what `make run` runs) with KUBECONFIG
pointing at an already running control plane, as a user points it at a kind cluster.

It must start karpy and nothing else — no second control plane — and leave the cluster running
when karpy stops.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import cluster
import pytest
from controlplane import COMPONENTS, ControlPlane
from kubetest import Kubectl

from tests.e2e.support import wait_for, wait_nodepool_ready

pytestmark = pytest.mark.timeout(300)
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "manifests" / "examples" / "kwok"


def _children(pid: int) -> dict[int, str]:
    """The live descendants of `pid`: pid -> command line."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if fields[0] in ("Z", "X"):
            continue
        parents[int(entry.name)] = int(fields[1])
        commands[int(entry.name)] = command
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in found:
                found[child] = commands[child]
                frontier.append(child)
    return found


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return "X"


def _cluster_up_pids() -> dict[str, int]:
    cp = cluster.attached()
    return cp.pids() if cp is not None else {}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def examples_removed(kubectl: Kubectl, clean_cluster: None) -> object:
    yield None
    kubectl("delete", "-f", str(EXAMPLES), "--ignore-not-found", "--wait=false", check=False)


def test_make_run_against_an_existing_cluster_starts_only_karpy(
    control_plane: ControlPlane,
    kubeconfig: str,
    kubectl: Kubectl,
    crds: None,
    examples_removed: None,
) -> None:
    plane_pids = control_plane.pids()
    cluster_up_before = _cluster_up_pids()
    env = {
        **os.environ,
        "KUBECONFIG": kubeconfig,
        "PATH": f"{control_plane.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
    }
    run = subprocess.Popen(
        [sys.executable, str(REPO / "hack" / "run.py")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # as from a terminal: a test runner's worker ignores Ctrl-C, and an ignored SIGINT is
        # inherited, so run.py would never see the Ctrl-C this test sends
        preexec_fn=_default_sigint,
    )
    output: list[str] = []
    hinted = threading.Event()

    def drain() -> None:
        """Read all of run.py's output: karpy logs to the same pipe, and a full pipe would
        block its event loop (and its Ctrl-C)."""
        assert run.stdout is not None
        for line in run.stdout:
            output.append(line)
            if "Ctrl-C stops karpy" in line:
                hinted.set()
        hinted.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert hinted.wait(120), "".join(output)
        text = "".join(output)
        assert f"using the cluster of $KUBECONFIG ({kubeconfig})" in text, text
        port = re.search(r"127\.0\.0\.1:(\d+)/metrics", text)
        assert port is not None, text

        def serving() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=2):
                return True

        wait_for(serving, timeout=60, message="karpy's metrics endpoint")
        wait_nodepool_ready(kubectl, "local", timeout=60)

        # Only karpy runs under make run (kubectl calls have finished by now).
        children = _children(run.pid)
        assert list(children.values()) == [f"{sys.executable} -m karpy.cli run"], children
        assert not any(Path(c.split()[0]).name in COMPONENTS for c in children.values()), (
            "no control plane component was started"
        )
        assert _cluster_up_pids() == cluster_up_before

        (karpy,) = children
        run.send_signal(signal.SIGINT)  # Ctrl-C
        assert run.wait(60) == 0
        assert _state(karpy) in ("X", "Z"), "karpy stopped with make run"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    # The cluster karpy ran against is untouched and still serving.
    assert control_plane.pids() == plane_pids
    assert control_plane.apiserver_ready()
    assert kubectl.json("get", "nodepool", "local")["metadata"]["name"] == "local"
    assert _cluster_up_pids() == cluster_up_before
