"""The chart's container command run as a local process: the installed Deployment's container
(the Containerfile's ENTRYPOINT with the rendered args and env, downward-API values filled in),
authenticated as the chart's ServiceAccount with a TokenRequest token. The image's /opt/venv is
this checkout's .venv; everything else is what a pod of the release would run."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubetest import Kubectl, wait_until

from tests.containerfile import container_argv, container_env
from tests.containerfile import load as load_containerfile
from tests.e2e.karpy_process import free_port
from tests.integration.chart.chart_support import CHART, REPO, Helm

JSON = dict[str, Any]
RELEASE = "karpenter"
FORBIDDEN = re.compile(r"(?<![\d.])403(?![\d])|[Ff]orbidden")


@dataclass
class RenderedCommand:
    """The running command of a release: its install output, pod name, ports and log."""

    installed: subprocess.CompletedProcess[str]
    pod_name: str
    metrics_port: int
    probe_port: int
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def token_kubeconfig(admin: str, token: str, path: Path) -> Path:
    """The admin kubeconfig's cluster with a bearer token as the only credential."""
    config: JSON = yaml.safe_load(Path(admin).read_text())
    cluster = config["clusters"][0]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": "karpenter", "user": {"token": token}}],
                "contexts": [
                    {"name": "sa", "context": {"cluster": cluster["name"], "user": "karpenter"}}
                ],
                "current-context": "sa",
            }
        )
    )
    return path


def http_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except OSError:
        return 0


@contextlib.contextmanager
def rendered_command(
    helm: Helm,
    kubectl: Kubectl,
    kubeconfig: str,
    namespace: str,
    workdir: Path,
    *install_args: str,
) -> Iterator[RenderedCommand]:
    """Install the chart into `namespace` with `install_args`, run its container command until
    /readyz answers and it holds the leader Lease; stop it (SIGTERM) and uninstall at exit."""
    metrics_port, probe_port = free_port(), free_port()
    installed = helm(
        "install",
        RELEASE,
        str(CHART),
        "--namespace",
        namespace,
        "--create-namespace",
        *install_args,
        "--set",
        f"controller.metrics.port={metrics_port}",
        "--set",
        f"controller.healthProbe.port={probe_port}",
    )
    # Karpenter's troubleshooting commands, unchanged
    kubectl("describe", "sa", "karpenter", "-n", namespace)
    pod_names = wait_until(
        lambda: kubectl(
            "get", "pods", "-n", namespace, "-l", "app.kubernetes.io/name=karpenter", "-o", "name"
        ).stdout.split(),
        timeout=30,
        message="the Deployment's pods",
    )
    pod_name = pod_names[0].removeprefix("pod/")

    deployment = kubectl.json("get", "deployment", "karpenter", "-n", namespace)
    ctr = deployment["spec"]["template"]["spec"]["containers"][0]
    stage = load_containerfile().final
    argv = container_argv(ctr, stage)
    image_env = dict(stage.env)
    image_env["PATH"] = image_env["PATH"].replace("/opt/venv/bin", str(REPO / ".venv" / "bin"))
    image_env["PATH"] = image_env["PATH"].replace("$PATH", "/usr/bin:/bin")
    executable = shutil.which(argv[0], path=image_env["PATH"])
    assert executable is not None and executable.startswith(str(REPO / ".venv")), executable

    token = kubectl(
        "create", "token", "karpenter", "-n", namespace, "--duration=3600s"
    ).stdout.strip()
    env = {
        **image_env,
        "HOME": str(workdir),
        **container_env(ctr, {"metadata.namespace": namespace, "metadata.name": pod_name}),
        # in a pod: the in-cluster ServiceAccount token; here the same identity from a file
        "KUBECONFIG": str(token_kubeconfig(kubeconfig, token, workdir / "sa.kubeconfig")),
    }
    log_path = workdir / "karpy.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv, env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    running = RenderedCommand(installed, pod_name, metrics_port, probe_port, proc, log_path)
    try:
        wait_until(
            lambda: proc.poll() is None and http_status(probe_port, "/readyz") == 200,
            timeout=90,
            message=f"/readyz of {argv}",
        )
        lease = wait_until(
            lambda: kubectl.json("get", "lease", "karpenter-leader-election", "-n", namespace),
            timeout=60,
            message=f"the leader Lease in {namespace}",
        )
        assert str(lease["spec"]["holderIdentity"]).startswith(pod_name)
        assert http_status(metrics_port, "/metrics") == 200
        yield running
        assert proc.poll() is None, running.log()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        with contextlib.suppress(Exception):
            helm("uninstall", RELEASE, "--namespace", namespace)


def assert_stopped_cleanly(running: RenderedCommand) -> None:
    """Exit 0 on SIGTERM, caches synced, and not one Forbidden: the chart's ClusterRole and
    Roles grant all that karpy used."""
    text = running.log()
    assert running.proc.returncode == 0, text[-3000:]
    assert "cache synced" in text
    denied = [line for line in text.splitlines() if FORBIDDEN.search(line)]
    assert not denied, "\n".join(line[:600] for line in denied[:5])
