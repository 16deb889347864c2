"""Helpers for tests that talk to the local control plane: kubectl, deadline waits, CRDs,
cleanup, fake nodes.

Synchronous on purpose (subprocess), so fixtures stay independent of pytest-asyncio's loops;
``async_wait_until`` is the one coroutine, for tests that poll with their own async client.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

CRDS = Path(__file__).resolve().parents[1] / "manifests" / "crds"
"""Karpenter's CRDs as karpy generates them."""
# Cluster-scoped kinds tests create, in deletion order (claims before pools before nodes).
CLUSTER_SCOPED_TEST_KINDS = (
    "nodeclaims.karpenter.sh",
    "nodepools.karpenter.sh",
    "nodes",
    "ec2nodeclasses.karpenter.k8s.aws",
    "kwoknodeclasses.karpenter.kwok.sh",
)


class KubectlError(subprocess.CalledProcessError):
    """kubectl failed; unlike CalledProcessError, str() shows its stderr."""

    def __str__(self) -> str:
        return f"{' '.join(map(str, self.cmd))} exited {self.returncode}: {self.stderr.strip()}"


class WaitTimeout(AssertionError):
    """A deadline wait expired; the message says what was awaited and what was seen last."""


class Kubectl:
    """Runs the built kubectl against one kubeconfig."""

    def __init__(self, binary: Path | str, kubeconfig: Path | str) -> None:
        self.binary = str(binary)
        self.kubeconfig = str(kubeconfig)

    def __call__(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self.binary, f"--kubeconfig={self.kubeconfig}", *args]
        proc = subprocess.run(
            cmd, input=input, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise KubectlError(proc.returncode, cmd, proc.stdout, proc.stderr)
        return proc

    def json(self, *args: str) -> Any:
        """``kubectl <args> -o json``, parsed."""
        return json.loads(self(*args, "-o", "json").stdout)

    def apply(self, manifest: Any, *args: str) -> subprocess.CompletedProcess[str]:
        """Apply an object, a list of objects, or YAML/JSON text."""
        text = manifest if isinstance(manifest, str) else _to_json_stream(manifest)
        return self("apply", "-f", "-", *args, input=text)

    def has_resource(self, resource: str) -> bool:
        """True if the API serves ``resource`` (e.g. ``nodepools.karpenter.sh``)."""
        proc = self("get", resource, "--ignore-not-found", "-o", "name", check=False)
        return proc.returncode == 0


def _to_json_stream(manifest: Any) -> str:
    items = manifest if isinstance(manifest, list) else [manifest]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def wait_until(
    predicate: Callable[[], T | None],
    *,
    timeout: float = 60.0,
    interval: float = 0.25,
    message: str = "condition",
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    Exceptions from the predicate count as "not yet"; the last one is reported on timeout.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except Exception as err:  # the object may not exist yet
            last = err
        if time.monotonic() >= deadline:
            raise WaitTimeout(
                f"timed out after {timeout:.0f}s waiting for {message}; last: {last!r}"
            )
        time.sleep(interval)


async def async_wait_until(
    predicate: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = 60.0,  # noqa: ASYNC109 - a polling deadline, as in wait_until
    interval: float = 0.25,
    message: str = "condition",
) -> T:
    """The coroutine twin of :func:`wait_until`."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = await predicate()
            if value:
                return value
            last = value
        except Exception as err:
            last = err
        if time.monotonic() >= deadline:
            raise WaitTimeout(
                f"timed out after {timeout:.0f}s waiting for {message}; last: {last!r}"
            )
        await asyncio.sleep(interval)


def install_crds(kubectl: Kubectl, directory: Path = CRDS) -> None:
    """Apply the CRDs in `directory` and wait until the apiserver serves them (idempotent).

    Server-side, forcing conflicts: suites of one session apply the same CRDs, and the last
    apply must win whichever suite made the one before.
    """
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(directory))
    kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "-f", str(directory), timeout=90
    )


def delete_cluster_objects(
    kubectl: Kubectl,
    kinds: Sequence[str] = CLUSTER_SCOPED_TEST_KINDS,
    *,
    selector: str | None = None,
    timeout: float = 60.0,
) -> None:
    """Delete every object of the given cluster-scoped kinds, stripping finalizers first.

    Kinds the API does not serve (CRDs not installed yet) are skipped. Finalizers go first
    because the controller that would remove them is usually not running after a test.
    """
    sel = [f"--selector={selector}"] if selector else []
    for kind in kinds:
        if not kubectl.has_resource(kind):
            continue
        names = _names(kubectl, kind, sel)
        for name in names:
            kubectl(
                "patch",
                name,
                "--type=merge",
                "--patch",
                '{"metadata":{"finalizers":null}}',
                check=False,
            )
        if names:
            kubectl("delete", *names, "--ignore-not-found", "--wait=false")
            wait_until(
                lambda kind=kind: not _names(kubectl, kind, sel),  # type: ignore[misc]
                timeout=timeout,
                message=f"{kind} to be deleted",
            )


def _names(kubectl: Kubectl, kind: str, selector: Iterable[str]) -> list[str]:
    out = kubectl("get", kind, "-o", "name", *selector).stdout
    return out.split()


def delete_namespace(kubectl: Kubectl, name: str) -> None:
    """Delete a namespace without waiting; force pods out since no kubelet will finish them."""
    kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=false")
    kubectl(
        "delete",
        "pods",
        "--all",
        f"--namespace={name}",
        "--force",
        "--grace-period=0",
        "--ignore-not-found",
        check=False,
    )


def now_rfc3339() -> str:
    """The current time as the API writes timestamps (UTC, seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def node_status(
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    ready: bool = True,
    stamp: str | None = None,
) -> dict[str, Any]:
    """The `status` of a fake Node: what it can hold, and the kubelet's `Ready` condition."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi"}
    stamp = stamp or now_rfc3339()
    return {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "reason": "KubeletReady",
                "message": "fake node",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
        ],
    }


def ready_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A fake Node object and the status to write through the status subresource.

    The scheduler reads ``status.allocatable``, which only the status subresource can set.
    """
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
        },
        "spec": {},
    }
    return node, {"status": node_status(cpu=cpu, memory=memory, pods=pods)}


def create_ready_node(kubectl: Kubectl, name: str, **kwargs: Any) -> None:
    """Create a fake Node and make it Ready with allocatable resources."""
    node, status = ready_node(name, **kwargs)
    kubectl.apply(node)
    kubectl(
        "patch",
        "node",
        name,
        "--subresource=status",
        "--type=merge",
        "--patch",
        json.dumps(status),
    )
