"""`make cluster-up` / `make cluster-down`: the local control plane in the background, for people.

    python hack/cluster.py up       start it (or say it is already up), write .local/kubeconfig,
                                    link kubectl and helm into .local/bin/
    python hack/cluster.py status   show the components; exit 0 when the cluster is up
    python hack/cluster.py down     stop every process `up` started

The processes run in their own session, so they outlive the command that started them; their
pids and ports live in .local/cluster/state.json, which is how `down` finds them again.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys

import controlplane
from controlplane import APISERVER, COMPONENTS, ControlPlane, ControlPlaneError

REPO = controlplane.HACK_DIR.parent
LOCAL = REPO / ".local"
CLUSTER_DIR = LOCAL / "cluster"
KUBECONFIG = LOCAL / "kubeconfig"
BIN_DIR = LOCAL / "bin"
HELM_BUILD = controlplane.HACK_DIR / "helm" / "build.sh"
LINKED = ("kubectl", "helm", "kwok")


def attached() -> ControlPlane | None:
    """The cluster-up control plane as recorded on disk, or None if there is no record."""
    try:
        return ControlPlane.attach(CLUSTER_DIR)
    except ControlPlaneError:
        return None


def _healthy(cp: ControlPlane | None) -> bool:
    return cp is not None and set(cp.pids()) == set(COMPONENTS) and cp.apiserver_ready()


def is_up() -> bool:
    """True when every cluster-up component runs and kube-apiserver is ready."""
    return _healthy(attached())


def up() -> int:
    cp = attached()
    if cp is not None and _healthy(cp):
        print(f"cluster already up at {cp.server} (kubeconfig {KUBECONFIG})")
        return 0
    if cp is not None and cp.pids():
        print(f"cluster partly running ({', '.join(cp.pids())}); restarting it", file=sys.stderr)
        cp.stop()
    bin_dir = controlplane.ensure_binaries()
    _build_helm()
    cp = ControlPlane(CLUSTER_DIR, bin_dir=bin_dir, detach=True)
    try:
        cp.start()
    except ControlPlaneError as err:
        print(f"cluster-up failed: {err}", file=sys.stderr)
        return 1
    _publish(cp)
    print(
        f"cluster v{controlplane.RELEASE} up at {cp.server} in {cp.timings['total']:.1f}s "
        f"(kube-apiserver {cp.timings[APISERVER]:.1f}s); logs in {CLUSTER_DIR}\n"
        f'use it with:  eval "$(hack/env)" && kubectl get namespaces\n'
        f"stop it with: make cluster-down"
    )
    return 0


def down() -> int:
    cp = attached()
    if cp is None or not cp.pids():
        print("cluster is not running")
        _unpublish()
        return 0
    cp.stop()
    _unpublish()
    print("cluster stopped")
    return 0


def status() -> int:
    cp = attached()
    pids = cp.pids() if cp is not None else {}
    if cp is None or not pids:
        print("cluster is not running")
        return 1
    for name in COMPONENTS:
        print(f"{name:24} {'pid ' + str(pids[name]) if name in pids else 'not running'}")
    ready = APISERVER in pids and cp.apiserver_ready()
    print(f"{'server':24} {cp.server} ({'ready' if ready else 'not ready'})")
    print(f"{'kubeconfig':24} {KUBECONFIG}")
    return 0 if ready and set(pids) == set(COMPONENTS) else 1


def _build_helm() -> None:
    """helm is a convenience here (the chart tests build it themselves), so a failed build
    only warns."""
    if (controlplane.cache_dir() / "helm").exists():
        return
    proc = subprocess.run([str(HELM_BUILD)], stdout=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        print(f"warning: {HELM_BUILD} failed; .local/bin/helm is not linked", file=sys.stderr)


def _publish(cp: ControlPlane) -> None:
    LOCAL.mkdir(parents=True, exist_ok=True)
    tmp = KUBECONFIG.with_suffix(".tmp")
    tmp.write_bytes(cp.kubeconfig.read_bytes())
    tmp.chmod(0o600)
    tmp.replace(KUBECONFIG)
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        target = cp.bin_dir / name
        link = BIN_DIR / name
        if link.is_symlink() or link.exists():
            link.unlink()
        if target.exists():
            link.symlink_to(target)


def _unpublish() -> None:
    KUBECONFIG.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "down", "status"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    os.chdir(REPO)
    command = {"up": up, "down": down, "status": status}[args.command]
    return command()


if __name__ == "__main__":
    sys.exit(main())
