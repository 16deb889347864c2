"""`make run`: karpy with the kwok provider on a local cluster, in the foreground.

Uses ``$KUBECONFIG`` when set (a kind cluster, say), else the `make cluster-up` cluster,
starting it if needed. Installs ``manifests/crds/`` and the kwok examples
(``manifests/examples/kwok/``: KWOKNodeClass and NodePool ``local``, the ``inflate`` demo
Deployment), then runs ``karpy run`` with ``PROVIDER=kwok`` in the foreground with readable
logs. Ctrl-C stops karpy, and the local control plane too if this run started it.

Against an existing cluster nothing else is started or stopped: the kubectl on ``PATH`` is used
(the control plane binaries are built only when there is none), and the cluster keeps running
after karpy stops.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import cluster
import controlplane
from kubetest import Kubectl

CRDS = cluster.REPO / "manifests" / "crds"
EXAMPLES = cluster.REPO / "manifests" / "examples" / "kwok"
STOP_GRACE = 30.0


class RunError(RuntimeError):
    """A step of `make run` failed; the message says which and why."""


def _external_kubeconfig() -> str | None:
    """``$KUBECONFIG`` when it names another cluster than the `make cluster-up` one."""
    env = os.environ.get("KUBECONFIG")
    if not env:
        return None
    if os.pathsep in env:
        raise RunError(
            "KUBECONFIG lists several files; point it at one, e.g. "
            "kubectl config view --flatten --minify > /tmp/kubeconfig"
        )
    if Path(env).resolve() == cluster.KUBECONFIG.resolve():
        return None
    return env


def ensure_cluster() -> tuple[str, bool]:
    """The kubeconfig of the cluster to use, and whether this run started it."""
    external = _external_kubeconfig()
    if external is not None:
        print(f"using the cluster of $KUBECONFIG ({external})")
        return external, False
    if not cluster.is_up():
        print("starting the local control plane (make cluster-up)")
        if cluster.up() != 0:
            raise RunError("the local control plane did not start")
        return str(cluster.KUBECONFIG), True
    print(f"reusing the local control plane ({cluster.KUBECONFIG})")
    return str(cluster.KUBECONFIG), False


def kubectl_binary(*, local: bool) -> Path:
    """The built kubectl for the local cluster; for another cluster the one on PATH, and the
    built one (building it if needed) only when there is none."""
    if not local:
        found = shutil.which("kubectl")
        if found:
            return Path(found)
    return controlplane.ensure_binaries() / "kubectl"


def _yaml_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))


def install_crds(kubectl: Kubectl) -> bool:
    """Apply manifests/crds and wait until they are Established. False if there are none."""
    files = _yaml_files(CRDS)
    if not files:
        print(f"no CRDs in {CRDS.relative_to(cluster.REPO)} yet (make generate writes them)")
        return False
    kubectl("apply", "-f", str(CRDS))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(CRDS))
    print(f"installed {len(files)} CRDs from {CRDS.relative_to(cluster.REPO)}")
    return True


def install_examples(kubectl: Kubectl, *, crds_installed: bool) -> list[str]:
    """Apply every example file; returns the failures (expected while CRDs are missing)."""
    failures = []
    for path in _yaml_files(EXAMPLES):
        proc = kubectl("apply", "-f", str(path), check=False)
        rel = path.relative_to(cluster.REPO)
        if proc.returncode == 0:
            print(f"applied {rel}")
        else:
            failures.append(f"{rel}: {proc.stderr.strip()}")
    if failures and not crds_installed:
        print("some examples need the CRDs, which are not generated yet:", *failures, sep="\n  ")
    return failures


def _port(preferred: int) -> int:
    """`preferred` if it is free on 127.0.0.1, else any free port."""
    for candidate in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise RunError("no free port on 127.0.0.1")


def _hints(kubeconfig: str, metrics_port: int) -> str:
    if kubeconfig == str(cluster.KUBECONFIG):
        shell = 'eval "$(hack/env)"        # kubectl and KUBECONFIG for the local cluster'
    else:
        shell = f"export KUBECONFIG={kubeconfig}"
    return (
        "\nkarpy is starting with the kwok provider. In another terminal:\n"
        f"  {shell}\n"
        "  kubectl scale deployment/inflate --replicas 5\n"
        "  kubectl get nodeclaims,nodes -l karpenter.sh/nodepool -w\n"
        "  kubectl scale deployment/inflate --replicas 0   # empty nodes go after 30s\n"
        f"  curl -s 127.0.0.1:{metrics_port}/metrics | grep ^karpenter_\n"
        "Ctrl-C stops karpy.\n"
    )


def run_controller(kubeconfig: str) -> int:
    """`karpy run` with the kwok provider in the foreground until Ctrl-C."""
    metrics_port = _port(8080)
    env = {
        **os.environ,
        "KUBECONFIG": kubeconfig,
        "PROVIDER": "kwok",
        "BIND_ADDRESS": "127.0.0.1",
        "METRICS_PORT": str(metrics_port),
        "HEALTH_PROBE_PORT": str(_port(8081)),
    }
    print(_hints(kubeconfig, metrics_port), flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "karpy.cli", "run"], cwd=cluster.REPO, env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        # Stop gracefully (karpy releases its lease), whether or not the terminal's SIGINT
        # reached it too.
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(STOP_GRACE)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            proc.send_signal(signal.SIGKILL)
            return proc.wait()


def main() -> int:
    started = False
    try:
        kubeconfig, started = ensure_cluster()
        local = kubeconfig == str(cluster.KUBECONFIG)
        kubectl = Kubectl(kubectl_binary(local=local), kubeconfig)
        crds = install_crds(kubectl)
        failures = install_examples(kubectl, crds_installed=crds)
        if failures:
            print("failed to apply:", *failures, sep="\n  ", file=sys.stderr)
            return 1
        return run_controller(kubeconfig)
    except (RunError, controlplane.ControlPlaneError, subprocess.CalledProcessError) as err:
        print(f"make run: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if started:
            print("stopping the local control plane this run started")
            cluster.down()


if __name__ == "__main__":
    sys.exit(main())
