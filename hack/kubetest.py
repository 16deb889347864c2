"""Helpers for tests that talk to the local control plane: kubectl, deadline waits, CRDs,
cleanup, fake nodes and the Leases that keep them Ready.

Synchronous on purpose (subprocess, a thread), so fixtures stay independent of pytest-asyncio's
loops; ``async_wait_until`` is the one coroutine, for tests that poll with their own async
client.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import ssl
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")

CRDS = Path(__file__).resolve().parents[1] / "manifests" / "crds"
"""Karpenter's CRDs as karpy generates them."""
# Cluster-scoped kinds tests create, in deletion order (claims before pools before nodes).
CLUSTER_SCOPED_TEST_KINDS = (
    "nodeclaims.karpenter.sh",
    "nodepools.karpenter.sh",
    "nodes",
    "ec2nodeclasses.karpenter.k8s.aws",
    "aksnodeclasses.karpenter.azure.com",
    "kwoknodeclasses.karpenter.kwok.sh",
    "schedulingconfigs.karpenter.sh",
    "nodeoverlays.karpenter.sh",
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


# --------------------------------------------------------------------------------------------
# Node Leases: the kubelets of static test nodes

NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_LEASE_DURATION_SECONDS = 40
"""A kubelet's default `nodeLeaseDurationSeconds`; it renews every quarter of it (10 s)."""
KWOK_PROVIDER_PREFIX = "kwok://"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
"""kwok's mark of a Node whose kubelet is simulated (karpy's simulator writes it too)."""

_log = logging.getLogger("kubetest")


def is_static_node(node: Mapping[str, Any]) -> bool:
    """True for Nodes a test made itself. kwok Nodes, and any Node annotated as kwok's (such
    as the EC2 instances' Nodes the e2e tests' simulated kubelets register), have a simulator
    as their kubelet: renewing their Leases too would make it stand back for another kubelet."""
    provider_id = str((node.get("spec") or {}).get("providerID") or "")
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return not provider_id.startswith(KWOK_PROVIDER_PREFIX) and (
        KWOK_NODE_ANNOTATION not in annotations
    )


def micro_time(moment: datetime | None = None) -> str:
    """metav1.MicroTime's wire format (a Lease's renewTime)."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class NodeLeases:
    """Stands in for the kubelets of the tests' static Nodes: renews each one's Lease in
    ``kube-node-lease`` every ``renew_interval`` seconds, as a kubelet does.

    The control plane runs the node lifecycle controller, as every cluster does: a Node whose
    Lease is not renewed becomes NotReady, is tainted ``node.kubernetes.io/unreachable`` and
    loses its pods. Static test nodes have no kubelet, so this thread renews their Leases
    (found by listing Nodes every ``poll_interval``) while the session runs. Nodes that
    ``serves`` rejects are left alone: by default kwok Nodes, whose kubelet is karpy's
    simulator, so a simulator that stops renewing is seen. Errors (an apiserver restarted by a
    test) are retried at the next poll.
    """

    def __init__(
        self,
        server: str,
        context: ssl.SSLContext,
        *,
        renew_interval: float = NODE_LEASE_DURATION_SECONDS / 4,
        poll_interval: float = 2.0,
        serves: Callable[[Mapping[str, Any]], bool] = is_static_node,
    ) -> None:
        url = urlsplit(server)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or 443
        self.context = context
        self.renew_interval = renew_interval
        self.poll_interval = poll_interval
        self.serves = serves
        self.renewals = 0
        self._renewed: dict[str, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: http.client.HTTPSConnection | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("NodeLeases already started")
        self._thread = threading.Thread(target=self._run, name="node-leases", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if self._conn is not None:
            self._conn.close()

    def __enter__(self) -> NodeLeases:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.renew_due()
            except (OSError, http.client.HTTPException, ValueError) as err:
                _log.debug("node lease renewal failed, retrying: %s", err)
                self._reset()
            self._stop.wait(self.poll_interval)

    def renew_due(self) -> None:
        """One pass: renew the Lease of every served Node not renewed for `renew_interval`."""
        status, body = self._request("GET", "/api/v1/nodes")
        if status != 200:
            raise ValueError(f"listing nodes: HTTP {status}")
        now = time.monotonic()
        seen: set[str] = set()
        for node in body.get("items") or ():
            meta = node.get("metadata") or {}
            name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
            if not name or meta.get("deletionTimestamp") or not self.serves(node):
                continue
            seen.add(name)
            last = self._renewed.get(name)
            if last is not None and last[0] == uid and now - last[1] < self.renew_interval:
                continue
            self._renew(name, uid)
            self._renewed[name] = (uid, now)
            self.renewals += 1
        for gone in set(self._renewed) - seen:
            del self._renewed[gone]

    def _renew(self, name: str, uid: str) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases"
        spec = {
            "holderIdentity": name,
            "leaseDurationSeconds": NODE_LEASE_DURATION_SECONDS,
            "renewTime": micro_time(),
        }
        status, _ = self._request(
            "PATCH",
            f"{path}/{name}",
            {"spec": spec},
            content_type="application/merge-patch+json",
        )
        if status == 404:
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": name,
                    "namespace": NODE_LEASE_NAMESPACE,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}
                    ],
                },
                "spec": spec,
            }
            status, _ = self._request("POST", path, lease)
            if status == 409:
                return  # created meanwhile; renewed at the next pass
        if status >= 300:
            raise ValueError(f"renewing the lease of node {name}: HTTP {status}")

    def _request(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        if self._conn is None:
            self._conn = http.client.HTTPSConnection(
                self.host, self.port, context=self.context, timeout=10
            )
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        self._conn.request(method, path, body=data, headers=headers)
        resp = self._conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else {}

    def _reset(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
        self._conn = None
