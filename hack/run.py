"""`make run`: a cluster with karpy's CRDs and examples, ready to look at.

Uses ``$KUBECONFIG`` when set, else the `make cluster-up` cluster, starting it if needed. Then
installs ``manifests/crds/`` and ``manifests/examples/`` and prints the kubectl commands to look
at them. Until the controller exists this is where it stops; later the controller runs here in
the foreground with the kwok provider (see ``run_controller``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cluster
import controlplane
from kubetest import Kubectl

CRDS = cluster.REPO / "manifests" / "crds"
EXAMPLES = cluster.REPO / "manifests" / "examples"


class RunError(RuntimeError):
    """A step of `make run` failed; the message says which and why."""


def ensure_cluster() -> Path:
    """Return the kubeconfig of the cluster to use, starting the local one if needed."""
    env = os.environ.get("KUBECONFIG")
    if env and Path(env).resolve() != cluster.KUBECONFIG.resolve():
        print(f"using the cluster of $KUBECONFIG ({env})")
        return Path(env)
    if not cluster.is_up():
        print("starting the local control plane (make cluster-up)")
        if cluster.up() != 0:
            raise RunError("the local control plane did not start")
    else:
        print(f"reusing the local control plane ({cluster.KUBECONFIG})")
    return cluster.KUBECONFIG


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


def run_controller(kubeconfig: Path) -> int:
    """Placeholder for the controller with the kwok provider in the foreground."""
    print(
        "\nThe controller does not exist yet. Look at what is installed:\n"
        '  eval "$(hack/env)"    # PATH and KUBECONFIG for the local cluster\n'
        "  kubectl get crd\n"
        "  kubectl get nodepools,nodeclaims,ec2nodeclasses,kwoknodeclasses\n"
        "  kubectl get deployments,pods -A\n"
        "  kubectl explain nodepool.spec.template.spec\n"
        "Stop the local cluster with: make cluster-down"
    )
    del kubeconfig
    return 0


def main() -> int:
    try:
        kubeconfig = ensure_cluster()
        kubectl = Kubectl(controlplane.cache_dir() / "kubectl", kubeconfig)
        crds = install_crds(kubectl)
        failures = install_examples(kubectl, crds_installed=crds)
    except (RunError, controlplane.ControlPlaneError, subprocess.CalledProcessError) as err:
        print(f"make run: {err}", file=sys.stderr)
        return 1
    if failures and crds:
        print("failed to apply:", *failures, sep="\n  ", file=sys.stderr)
        return 1
    return run_controller(kubeconfig)


if __name__ == "__main__":
    sys.exit(main())
