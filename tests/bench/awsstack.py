"""The set-up the whole-system AWS benches share: a private control plane with karpy's CRDs, a
moto server in a process of its own, seeded by `hack/aws/moto_seed.py`.

moto runs in its own process, as a cloud API does: in the bench's process it shared one
interpreter lock with the stand-in kubelets and the probes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "hack") not in sys.path:
    sys.path.insert(0, str(REPO / "hack"))

import controlplane  # noqa: E402
from kubetest import Kubectl  # noqa: E402

from tests.e2e.karpy_process import free_port  # noqa: E402

__all__ = [
    "CLIENT_BUDGET",
    "CREDENTIALS",
    "REGION",
    "Kubectl",
    "aws_settings",
    "control_plane",
    "seed_moto",
    "start_moto",
]

REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
CLIENT_BUDGET = ("--kube-api-qps=500", "--kube-api-burst=1000")


def control_plane(work_dir: Path, namespace: str) -> tuple[controlplane.ControlPlane, Kubectl]:
    """A started control plane with karpy's CRDs established and `namespace` created."""
    cp = controlplane.ControlPlane(
        work_dir / "cp",
        bin_dir=controlplane.ensure_binaries(),
        controller_manager_args=CLIENT_BUDGET,
        scheduler_args=CLIENT_BUDGET,
    )
    cp.start()
    try:
        kubectl = Kubectl(cp.kubectl_path, cp.kubeconfig)
        crds = REPO / "manifests" / "crds"
        kubectl("apply", "--server-side", "-f", str(crds))
        kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(crds))
        kubectl("create", "namespace", namespace)
    except BaseException:
        cp.stop()
        raise
    return cp, kubectl


def start_moto(
    work_dir: Path, env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m moto.server` on a free loopback port (extra `env` for moto's own switches)."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with (work_dir / "moto.log").open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                return proc, endpoint
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"moto server exited: see {work_dir / 'moto.log'}") from None
            time.sleep(0.2)
    proc.terminate()
    raise TimeoutError("moto server did not answer within 60 s")


def seed_moto(endpoint: str) -> str:
    """Seeds the VPC, subnets, security group, role and cluster `demo`; returns the AMI id."""
    return subprocess.run(
        [sys.executable, str(REPO / "hack/aws/moto_seed.py"), "--endpoint-url", endpoint],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


def aws_settings(endpoint: str) -> dict[str, str]:
    """`karpy run` settings for PROVIDER=aws against the seeded moto server."""
    return {
        "PROVIDER": "aws",
        "CLUSTER_NAME": "demo",
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_CONFIG_FILE": "/dev/null",
        **CREDENTIALS,
    }
