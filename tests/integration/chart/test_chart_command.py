"""The chart's container command, proven: the installed Deployment's container (the
Containerfile's ENTRYPOINT with the rendered args and env, downward-API values filled in) runs
as a local process, authenticated as the chart's ServiceAccount with a TokenRequest token, and,
installed from a Karpenter user's values file (with an older Karpenter's `drift` gate) and
`provider: kwok`, provisions pending pods and removes the nodes once they are deleted. Any
Forbidden in its log fails the test, so the ClusterRole and Roles grant all that karpy uses."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubetest import Kubectl, delete_namespace, wait_until

from tests.containerfile import container_argv, container_env
from tests.containerfile import load as load_containerfile
from tests.e2e.karpy_process import free_port
from tests.e2e.support import deployment, kwok_nodeclass, nodepool, wait_bound
from tests.integration.chart.chart_support import CHART, REPO, Helm
from tests.integration.chart.test_chart_karpenter_values import DRIFT_VALUES, KARPENTER_VALUES

JSON = dict[str, Any]
RELEASE = "karpenter"
FORBIDDEN = re.compile(r"(?<![\d.])403(?![\d])|[Ff]orbidden")


@pytest.fixture
def release_namespace(kubectl: Kubectl) -> Iterator[str]:
    name = f"karpenter-{uuid.uuid4().hex[:6]}"
    yield name
    delete_namespace(kubectl, name)


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


def karpy_nodes(kubectl: Kubectl) -> list[JSON]:
    items: list[JSON] = kubectl.json("get", "nodes", "-l", "karpenter.sh/nodepool=chart")["items"]
    return items


def test_rendered_command_provisions_as_the_chart_service_account(
    cluster_helm: Helm,
    kubectl: Kubectl,
    kubeconfig: str,
    crds: None,
    clean_cluster: None,
    namespace: str,
    release_namespace: str,
    tmp_path: Path,
) -> None:
    ns = release_namespace
    metrics_port, probe_port = free_port(), free_port()
    # a Karpenter user's values file, with a gate of an older Karpenter (drift) in it
    installed = cluster_helm(
        "install",
        RELEASE,
        str(CHART),
        "--namespace",
        ns,
        "--create-namespace",
        "-f",
        str(KARPENTER_VALUES),
        "-f",
        str(DRIFT_VALUES),
        "--set",
        "provider=kwok",
        "--set",
        f"controller.metrics.port={metrics_port}",
        "--set",
        f"controller.healthProbe.port={probe_port}",
        "--set",
        "settings.batchIdleDuration=500ms",
    )
    assert "settings.featureGates.drift is not a feature gate of karpy" in installed.stdout
    # Karpenter's troubleshooting commands, unchanged
    kubectl("describe", "sa", "karpenter", "-n", ns)
    pod_names = wait_until(
        lambda: kubectl(
            "get", "pods", "-n", ns, "-l", "app.kubernetes.io/name=karpenter", "-o", "name"
        ).stdout.split(),
        timeout=30,
        message="the Deployment's pods",
    )
    pod_name = pod_names[0].removeprefix("pod/")

    ctr = kubectl.json("get", "deployment", "karpenter", "-n", ns)["spec"]["template"]["spec"][
        "containers"
    ][0]
    stage = load_containerfile().final
    argv = container_argv(ctr, stage)
    image_env = dict(stage.env)
    # the image's /opt/venv is this checkout's .venv
    image_env["PATH"] = image_env["PATH"].replace("/opt/venv/bin", str(REPO / ".venv" / "bin"))
    image_env["PATH"] = image_env["PATH"].replace("$PATH", "/usr/bin:/bin")
    executable = shutil.which(argv[0], path=image_env["PATH"])
    assert executable is not None and executable.startswith(str(REPO / ".venv")), executable

    token = kubectl("create", "token", "karpenter", "-n", ns, "--duration=3600s").stdout.strip()
    sa_kubeconfig = token_kubeconfig(kubeconfig, token, tmp_path / "sa.kubeconfig")
    env = {
        **image_env,
        "HOME": str(tmp_path),
        **container_env(ctr, {"metadata.namespace": ns, "metadata.name": pod_name}),
        # in a pod: the in-cluster ServiceAccount token; here the same identity from a file
        "KUBECONFIG": str(sa_kubeconfig),
    }
    log_path = tmp_path / "karpy.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log_text() -> str:
        return log_path.read_text(errors="replace")

    try:
        wait_until(
            lambda: proc.poll() is None and http_status(probe_port, "/readyz") == 200,
            timeout=90,
            message=f"/readyz of {argv}",
        )
        lease = wait_until(
            lambda: kubectl.json("get", "lease", "karpenter-leader-election", "-n", ns),
            timeout=60,
            message=f"the leader Lease in {ns}",
        )
        assert str(lease["spec"]["holderIdentity"]).startswith(pod_name)
        assert http_status(metrics_port, "/metrics") == 200

        kubectl.apply(
            [kwok_nodeclass("chart"), nodepool("chart", nodeclass="chart", consolidate_after="0s")]
        )
        kubectl.apply(deployment("inflate", namespace, replicas=3, cpu="1", memory="1Gi"))
        bound = wait_bound(kubectl, namespace, 3, timeout=120)
        nodes = karpy_nodes(kubectl)
        assert nodes and {p["spec"]["nodeName"] for p in bound} <= {
            n["metadata"]["name"] for n in nodes
        }
        # karpy is the kwok nodes' kubelet: Ready reported (nodes/status) and Leases renewed
        name = nodes[0]["metadata"]["name"]
        wait_until(
            lambda: kubectl.json("get", "lease", name, "-n", "kube-node-lease"),
            timeout=30,
            message=f"the Lease of node {name}",
        )
        ready = {
            c["type"]: c["status"]
            for c in kubectl.json("get", "node", name)["status"].get("conditions", [])
        }
        assert ready.get("Ready") == "True", ready

        kubectl("delete", "deployment", "inflate", "-n", namespace)
        wait_until(
            lambda: not karpy_nodes(kubectl) and not kubectl.json("get", "nodeclaims")["items"],
            timeout=120,
            message="the empty nodes and their NodeClaims to be removed",
        )
        assert proc.poll() is None, log_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        with contextlib.suppress(Exception):
            cluster_helm("uninstall", RELEASE, "--namespace", ns)
    assert proc.returncode == 0, log_text()[-3000:]
    text = log_text()
    assert "cache synced" in text
    denied = [line for line in text.splitlines() if FORBIDDEN.search(line)]
    assert not denied, "\n".join(line[:600] for line in denied[:5])
