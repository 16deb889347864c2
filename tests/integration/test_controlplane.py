"""Smoke tests of the local control plane: the parts karpy's tests rely on really work.

Covers the reference's pitfalls P10/P11 (the scheduler binds pods to fake Ready nodes and marks
pods that fit nowhere Unschedulable), the controller-manager's controllers (node lifecycle and
taint eviction among them, fed by the Leases `kubetest.NodeLeases` renews for static nodes),
apiserver restarts under a live watch, and forcing 410 Gone by compacting etcd.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import shutil
import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import controlplane
import pytest
from controlplane import (
    APISERVER,
    TEST_NODE_MONITOR,
    ComponentError,
    ControlPlane,
    PortInUseError,
)
from kubetest import (
    Kubectl,
    async_wait_until,
    create_ready_node,
    ready_node,
    wait_until,
)

DEADLINE = 90.0


def _deployment(name: str, *, replicas: int, node: str, cpu: str = "100m") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                        }
                    ],
                },
            },
        },
    }


def _pods(kubectl: Kubectl, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kubectl.json(
        "get", "pods", "-n", namespace, f"--selector={selector}"
    )["items"]
    return items


def _node_name() -> str:
    return f"fake-{uuid.uuid4().hex[:8]}"


def test_version_reports_the_pinned_release(kubectl: Kubectl) -> None:
    version = json.loads(kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"] == f"v{controlplane.RELEASE}"
    assert version["gitVersion"] == "v1.37.2"


def test_etcd_is_the_version_kubernetes_pins(control_plane: ControlPlane) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(control_plane.etcd_url.rsplit(":", 1)[1]))
    conn.request("GET", "/version")
    served = json.loads(conn.getresponse().read())["etcdserver"]
    go_mod = (controlplane.K8S_MODULE_DIR / "go.mod").read_text()
    assert f"go.etcd.io/etcd/client/v3 v{served}" in go_mod


@pytest.mark.usefixtures("clean_cluster")
def test_deployment_pods_are_created_and_bound_to_a_fake_ready_node(
    kubectl: Kubectl, namespace: str
) -> None:
    node = _node_name()
    create_ready_node(kubectl, node)

    # P10: TaintNodesByCondition taints a new Node not-ready; the node lifecycle controller
    # lifts the taint once the Node is Ready.
    def untainted() -> dict[str, Any] | None:
        stored: dict[str, Any] = kubectl.json("get", "node", node)
        return None if stored["spec"].get("taints") else stored

    stored = wait_until(untainted, timeout=DEADLINE, message="the not-ready taint lifted")
    assert stored["status"]["allocatable"]["cpu"] == "4"

    kubectl.apply(_deployment("web", replicas=3, node=node), "-n", namespace)

    def bound() -> list[str] | None:
        pods = _pods(kubectl, namespace, "app=web")
        nodes = [p["spec"].get("nodeName") for p in pods]
        return nodes if len(pods) == 3 and all(nodes) else None

    nodes = wait_until(bound, timeout=DEADLINE, message="3 pods bound by kube-scheduler")
    assert nodes == [node, node, node]


def _taints(node: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or ()}


def _ready(node: dict[str, Any]) -> str:
    return next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready")


@pytest.mark.usefixtures("clean_cluster")
def test_a_node_without_heartbeats_becomes_unreachable_and_loses_its_pods(
    kubectl: Kubectl, namespace: str
) -> None:
    """The node lifecycle and taint-eviction controllers run as in any cluster: a Node whose
    Lease nobody renews is marked Unknown after the grace period, tainted unreachable, and its
    pods are evicted once their toleration runs out; a static Node whose Lease the tests'
    `NodeLeases` renews stays Ready all along."""
    alive, orphan = _node_name(), _node_name()
    create_ready_node(kubectl, alive)
    # A kwok providerID: no kwok simulator runs here, and NodeLeases leaves kwok nodes alone.
    manifest, status = ready_node(orphan)
    manifest["spec"]["providerID"] = f"kwok://{orphan}"
    kubectl.apply(manifest)
    kubectl(
        "patch",
        "node",
        orphan,
        "--subresource=status",
        "--type=merge",
        "--patch",
        json.dumps(status),
    )
    toleration = {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}
    for node in (alive, orphan):
        template = _deployment(f"on-{node}", replicas=1, node=node)["spec"]["template"]
        template["spec"]["tolerations"] = [toleration]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"on-{node}"}}
        kubectl.apply({**pod, "spec": template["spec"]}, "-n", namespace)

    def evicted() -> bool:
        node = kubectl.json("get", "node", orphan)
        pods = {
            p["metadata"]["name"]: p for p in kubectl.json("get", "pods", "-n", namespace)["items"]
        }
        victim = pods.get(f"on-{orphan}")
        deleting = victim is None or bool(victim["metadata"].get("deletionTimestamp"))
        return (
            _ready(node) == "Unknown"
            and ("node.kubernetes.io/unreachable", "NoExecute") in _taints(node)
            and deleting
        )

    wait_until(
        evicted,
        timeout=TEST_NODE_MONITOR.grace_period * 2 + 30,
        interval=1.0,
        message="the orphan node unreachable and its pod evicted",
    )
    healthy = kubectl.json("get", "node", alive)
    assert _ready(healthy) == "True" and not _taints(healthy)
    lease = kubectl.json("get", "lease", alive, "-n", "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == alive
    pod = kubectl.json("get", "pod", f"on-{alive}", "-n", namespace)
    assert pod["spec"]["nodeName"] == alive and not pod["metadata"].get("deletionTimestamp")


@pytest.mark.usefixtures("clean_cluster")
def test_a_pod_that_fits_nowhere_is_marked_unschedulable(kubectl: Kubectl, namespace: str) -> None:
    node = _node_name()
    create_ready_node(kubectl, node, cpu="2")
    kubectl.apply(_deployment("big", replicas=1, node=node, cpu="3"), "-n", namespace)

    def unschedulable() -> dict[str, Any] | None:
        pods = _pods(kubectl, namespace, "app=big")
        for cond in pods[0]["status"].get("conditions", []) if pods else []:
            if cond["type"] == "PodScheduled" and cond["reason"] == "Unschedulable":
                return dict(cond)
        return None

    cond = wait_until(unschedulable, timeout=DEADLINE, message="PodScheduled=False")
    assert cond["status"] == "False"
    assert "Insufficient cpu" in cond["message"]


@pytest.mark.usefixtures("clean_cluster")
def test_disruption_controller_computes_pdb_status(kubectl: Kubectl, namespace: str) -> None:
    node = _node_name()
    create_ready_node(kubectl, node)
    kubectl.apply(_deployment("db", replicas=3, node=node), "-n", namespace)
    kubectl.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
        },
        "-n",
        namespace,
    )

    def bound() -> list[dict[str, Any]] | None:
        pods = _pods(kubectl, namespace, "app=db")
        return pods if len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods) else None

    pods = wait_until(bound, timeout=DEADLINE, message="3 bound pods")
    # Play kubelet: only Ready pods count as healthy.
    for pod in pods:
        kubectl(
            "patch",
            "pod",
            pod["metadata"]["name"],
            "-n",
            namespace,
            "--subresource=status",
            "--type=strategic",
            "--patch",
            json.dumps(
                {
                    "status": {
                        "phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True"}],
                    }
                }
            ),
        )

    def status() -> dict[str, Any] | None:
        st: dict[str, Any] = kubectl.json("get", "pdb", "db", "-n", namespace).get("status", {})
        return st if st.get("currentHealthy") == 3 else None

    st = wait_until(status, timeout=DEADLINE, message="PDB status with 3 healthy pods")
    assert st["expectedPods"] == 3
    assert st["desiredHealthy"] == 2
    assert st["disruptionsAllowed"] == 1


def test_garbage_collector_and_namespace_controller(kubectl: Kubectl, namespace: str) -> None:
    other = f"gc-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", other)
    kubectl("create", "configmap", "c", "-n", other)
    kubectl.apply(_deployment("gc", replicas=1, node="nowhere"), "-n", namespace)
    wait_until(
        lambda: kubectl("get", "rs", "-n", namespace, "-o", "name").stdout.strip(),
        timeout=DEADLINE,
        message="a ReplicaSet from the deployment controller",
    )
    kubectl("delete", "deployment", "gc", "-n", namespace, "--cascade=background")
    wait_until(
        lambda: not kubectl("get", "rs", "-n", namespace, "-o", "name").stdout.strip(),
        timeout=DEADLINE,
        message="the garbage collector to delete the orphaned ReplicaSet",
    )
    kubectl("delete", "namespace", other, "--wait=false")
    wait_until(
        lambda: not kubectl("get", "namespace", other, "--ignore-not-found", "-o", "name").stdout,
        timeout=DEADLINE,
        message="the namespace controller to finish deleting the namespace",
    )


# ---------------------------------------------------------------------------------------------
# Watches across apiserver restarts and compaction. A minimal list+watch loop with client-go's
# rules (resume from the last resourceVersion, relist on 410, retry on connection errors).


class _Gone(Exception):
    pass


class _Retry(Exception):
    pass


@dataclass
class _Watcher:
    session: aiohttp.ClientSession
    url: str
    events: list[tuple[str, str]] = field(default_factory=list)
    disconnects: int = 0
    relists: int = 0
    resource_version: str = ""

    async def list(self) -> None:
        async with self.session.get(self.url) as resp:
            if resp.status != 200:
                raise _Retry(resp.status)
            body = await resp.json()
        self.resource_version = body["metadata"]["resourceVersion"]

    async def run(self) -> None:
        while True:
            try:
                if not self.resource_version:
                    await self.list()
                    self.relists += 1
                await self._watch()
            except _Gone:
                self.resource_version = ""
            except (aiohttp.ClientError, TimeoutError, _Retry):
                self.disconnects += 1
                await asyncio.sleep(0.2)

    async def _watch(self) -> None:
        params = {
            "watch": "1",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "300",
        }
        timeout = aiohttp.ClientTimeout(sock_connect=5, sock_read=30)
        async with self.session.get(self.url, params=params, timeout=timeout) as resp:
            if resp.status == 410:
                raise _Gone
            if resp.status != 200:
                raise _Retry(resp.status)
            async for line in resp.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "ERROR":
                    raise _Gone if obj.get("code") == 410 else _Retry(obj)
                self.resource_version = obj["metadata"]["resourceVersion"]
                if event["type"] != "BOOKMARK":
                    self.events.append((event["type"], obj["metadata"]["name"]))
        raise _Retry("stream ended")


@contextlib.asynccontextmanager
async def _session(cp: ControlPlane) -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.TCPConnector(ssl=cp.pki.client_ssl_context())
    async with aiohttp.ClientSession(base_url=cp.server, connector=connector) as session:
        yield session


async def test_watch_resumes_after_apiserver_is_killed_and_restarted(
    control_plane: ControlPlane, kubectl: Kubectl, namespace: str
) -> None:
    async with _session(control_plane) as session:
        watcher = _Watcher(session, f"/api/v1/namespaces/{namespace}/configmaps")
        task = asyncio.create_task(watcher.run())
        try:
            await asyncio.to_thread(kubectl, "create", "configmap", "before", "-n", namespace)
            await async_wait_until(
                _has(watcher, ("ADDED", "before")), timeout=DEADLINE, message="ADDED before"
            )

            await asyncio.to_thread(control_plane.stop_apiserver, kill=True)
            await async_wait_until(
                _true(lambda: watcher.disconnects > 0), timeout=DEADLINE, message="disconnect"
            )
            await asyncio.to_thread(control_plane.start_apiserver)

            await asyncio.to_thread(kubectl, "create", "configmap", "after", "-n", namespace)
            await async_wait_until(
                _has(watcher, ("ADDED", "after")), timeout=DEADLINE, message="ADDED after"
            )
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if APISERVER not in control_plane.pids():
                await asyncio.to_thread(control_plane.start_apiserver)
    assert watcher.events.count(("ADDED", "before")) == 1
    assert watcher.events.count(("ADDED", "after")) == 1


def _has(watcher: _Watcher, event: tuple[str, str]) -> Any:
    async def check() -> bool:
        return event in watcher.events

    return check


def _true(fn: Any) -> Any:
    async def check() -> bool:
        return bool(fn())

    return check


def _raw_watch(cp: ControlPlane, path: str, resource_version: str) -> tuple[int, list[Any]]:
    """One short watch request; returns the HTTP status and the decoded events."""
    conn = http.client.HTTPSConnection(
        "127.0.0.1", int(cp.server.rsplit(":", 1)[1]), context=cp.pki.client_ssl_context()
    )
    conn.request("GET", f"{path}?watch=1&timeoutSeconds=2&resourceVersion={resource_version}")
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    if resp.status != 200:
        return resp.status, [json.loads(body)]
    return resp.status, [json.loads(line) for line in body.splitlines() if line.strip()]


def test_compacting_etcd_makes_an_old_watch_410(
    control_plane_no_watch_cache: ControlPlane,
) -> None:
    cp = control_plane_no_watch_cache
    kubectl = Kubectl(cp.kubectl_path, cp.kubeconfig)
    kubectl("create", "configmap", "c", "--from-literal=v=0")
    old_rv = kubectl.json("get", "configmap", "c")["metadata"]["resourceVersion"]
    for i in (1, 2):
        kubectl(
            "patch", "configmap", "c", "--type=merge", "-p", json.dumps({"data": {"v": str(i)}})
        )
    path = "/api/v1/namespaces/default/configmaps"

    status, events = _raw_watch(cp, path, old_rv)
    assert status == 200
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED"]

    assert cp.compact_etcd() > int(old_rv)
    status, events = _raw_watch(cp, path, old_rv)
    codes = [status] if status != 200 else [e["object"].get("code") for e in events]
    assert codes == [410], events


def test_a_component_that_dies_at_start_fails_start_with_its_log(tmp_path: Path) -> None:
    cp = ControlPlane(tmp_path, apiserver_args=["--no-such-flag"], start_timeout=60)
    with pytest.raises(ComponentError) as err:
        cp.start()
    assert err.value.component == APISERVER
    assert "unknown flag: --no-such-flag" in str(err.value)
    assert cp.pids() == {}
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["pids"] == {}


def test_binaries_that_cannot_be_built_fail_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PATH with the shell tools build.sh needs but no Go, and an empty cache.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "cat", "dirname"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    assert controlplane.missing_binaries() == list(controlplane.BINARIES)
    with pytest.raises(controlplane.BinariesError, match=r"Go >= 1\.26 is needed"):
        controlplane.ensure_binaries()


def test_a_port_taken_by_someone_else_is_reported_as_a_port_clash(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # Extra args come last, so this overrides the port start() picked, on every attempt.
        cp = ControlPlane(tmp_path, apiserver_args=[f"--secure-port={port}"], start_timeout=60)
        with pytest.raises(PortInUseError) as err:
            cp.start(attempts=2)
    assert err.value.component == APISERVER
    assert "address already in use" in err.value.log_tail
    assert cp.pids() == {}
