"""A real Kubernetes control plane on loopback, for tests and local runs.

Starts the upstream etcd, kube-apiserver, kube-scheduler and kube-controller-manager built by
``hack/k8s/build.sh`` as separate processes (one component per process avoids the global-state
clashes of running them in one), with a generated PKI and an admin kubeconfig. This is test and
developer tooling: nothing under ``karpy/`` may import it.

Typical use::

    cp = ControlPlane(tmp_dir)
    cp.start()
    ...  # talk to cp.server with cp.kubeconfig
    cp.stop()
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from pki import Pki, write_kubeconfig

log = logging.getLogger("controlplane")

HACK_DIR = Path(__file__).resolve().parent
K8S_MODULE_DIR = HACK_DIR / "k8s"
BUILD_SCRIPT = K8S_MODULE_DIR / "build.sh"
RELEASE = (K8S_MODULE_DIR / "RELEASE").read_text().strip()

ETCD = "etcd"
APISERVER = "kube-apiserver"
SCHEDULER = "kube-scheduler"
CONTROLLER_MANAGER = "kube-controller-manager"
COMPONENTS = (ETCD, APISERVER, SCHEDULER, CONTROLLER_MANAGER)
BINARIES = (*COMPONENTS, "kubectl")

# The controllers every real cluster runs that karpy's flows meet. Node lifecycle and taint
# eviction are on as in any cluster: a Node whose Lease in kube-node-lease is not renewed
# becomes NotReady, is tainted `node.kubernetes.io/unreachable` and its pods are evicted. karpy's
# kwok simulator renews the Leases of kwok nodes; tests renew those of their static nodes
# (hack/kubetest.py, `NodeLeases`).
DEFAULT_CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "daemonset-controller",
    "statefulset-controller",
    "job-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "pod-garbage-collector-controller",
    "disruption-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "clusterrole-aggregation-controller",
)


@dataclass(frozen=True, slots=True)
class NodeMonitor:
    """The node lifecycle controller's timing (kube-controller-manager flags, seconds).

    The defaults are Kubernetes' own (v1.37): a Node is marked unhealthy when its kubelet has
    not renewed its Lease (nor posted status) for `grace_period` (`--node-monitor-grace-period`;
    `startup_grace_period` for a Node that never posted status), checked every `period`
    (`--node-monitor-period`). Pods are then evicted by the NoExecute taint once their
    toleration runs out: 300 s, the `tolerationSeconds` the DefaultTolerationSeconds admission
    plugin adds to every pod that sets none (shorter tolerations can be set on a pod).
    """

    grace_period: float = 50.0
    startup_grace_period: float = 60.0
    period: float = 5.0

    def args(self) -> list[str]:
        return [
            f"--node-monitor-grace-period={self.grace_period:g}s",
            f"--node-startup-grace-period={self.startup_grace_period:g}s",
            f"--node-monitor-period={self.period:g}s",
        ]


TEST_NODE_MONITOR = NodeMonitor(grace_period=30.0, startup_grace_period=30.0, period=2.0)
"""Shorter timing for the test suites: three missed 10 s Lease renewals make a Node NotReady
(30 s instead of 50 s), checked every 2 s, so heartbeat tests take half a minute, not a
minute, while one late renewal on a loaded machine is still harmless."""

SERVICE_CIDR = "10.0.0.0/24"
STATE_FILE = "state.json"
_ADDRESS_IN_USE = "address already in use"


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or stopped."""


class BinariesError(ControlPlaneError):
    """The control plane binaries are missing and could not be built."""


class ComponentError(ControlPlaneError):
    """One component died or never became healthy; the message carries its log tail."""

    def __init__(self, component: str, reason: str, log_tail: str) -> None:
        super().__init__(f"{component} {reason}; last lines of its log:\n{log_tail}")
        self.component = component
        self.log_tail = log_tail


class PortInUseError(ComponentError):
    """A component lost the race for a port it was given; start-up retries with new ports."""


def cache_dir(release: str = RELEASE) -> Path:
    """Where build.sh puts the binaries of one release (per user, shared by every clone)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "karpy" / "k8s" / f"v{release}"


def missing_binaries(bin_dir: Path | None = None) -> list[str]:
    directory = bin_dir or cache_dir()
    return [b for b in BINARIES if not os.access(directory / b, os.X_OK)]


def ensure_binaries() -> Path:
    """Return the binary directory, running hack/k8s/build.sh first if anything is missing.

    Raises BinariesError carrying the end of the build's output, so a test session that
    cannot build them fails with the reason.
    """
    directory = cache_dir()
    if not missing_binaries(directory):
        return directory
    log.warning("building the control plane binaries with %s (several minutes)", BUILD_SCRIPT)
    proc = subprocess.run(
        [str(BUILD_SCRIPT)], capture_output=True, text=True, check=False, cwd=HACK_DIR
    )
    if proc.returncode != 0:
        raise BinariesError(
            f"{BUILD_SCRIPT} failed with status {proc.returncode}:\n{proc.stderr[-4000:]}"
        )
    log.info("%s", proc.stderr.strip())
    built = Path(proc.stdout.strip().splitlines()[-1])
    still_missing = missing_binaries(built)
    if still_missing:
        raise BinariesError(f"{BUILD_SCRIPT} finished but {still_missing} are missing in {built}")
    return built


# --------------------------------------------------------------------------------------------
# Processes


class _Process:
    """A component process, held either as our own child or, after attach(), by pid alone."""

    def __init__(self, *, pid: int, popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self.popen = popen

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")

    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None

    def signal(self, sig: signal.Signals) -> None:
        if self.popen is not None:
            if self.popen.poll() is None:
                self.popen.send_signal(sig)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)

    def wait(self, timeout: float) -> bool:
        """Wait until the process is gone; True if it is."""
        if self.popen is not None:
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self, *, grace: float) -> None:
        if not self.alive():
            self.wait(0)
            return
        if grace > 0:
            self.signal(signal.SIGTERM)
            if self.wait(grace):
                return
        self.signal(signal.SIGKILL)
        if not self.wait(10):
            raise ControlPlaneError(f"process {self.pid} survived SIGKILL")


def _pid_runs(pid: int, binary: str) -> bool:
    """True if pid is alive and still runs `binary` (guards against pid reuse)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    return Path(exe.removesuffix(" (deleted)")).name == binary


class _Ports:
    """Free loopback ports. Probing races with other processes; start() retries on a clash."""

    def __init__(self) -> None:
        self._given: set[int] = set()

    def take(self) -> int:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
            if port not in self._given:
                self._given.add(port)
                return port
        raise ControlPlaneError("no free loopback port found")


def _tail(path: Path, lines: int) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))
            text = f.read().decode(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# The control plane


class ControlPlane:
    """etcd + kube-apiserver + kube-scheduler + kube-controller-manager on 127.0.0.1.

    Everything lives in ``work_dir``: PKI, etcd data, one log file per component, the admin
    kubeconfig and ``state.json`` (ports and pids, so another process can ``attach()`` and stop
    a control plane it did not start).
    """

    STOP_GRACE: ClassVar[float] = 10.0

    def __init__(
        self,
        work_dir: Path | str,
        *,
        bin_dir: Path | None = None,
        watch_cache: bool = True,
        apiserver_args: Sequence[str] = (),
        etcd_args: Sequence[str] = (),
        scheduler_args: Sequence[str] = (),
        controller_manager_args: Sequence[str] = (),
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        node_monitor: NodeMonitor = NodeMonitor(),
        start_timeout: float = 180.0,
        detach: bool = False,
    ) -> None:
        """
        Args:
            watch_cache: False makes the apiserver read and watch etcd directly, so a watch at
                a compacted resourceVersion gets 410 Gone (see compact_etcd()).
            node_monitor: the node lifecycle controller's grace periods (Kubernetes' defaults
                unless given; tests use `TEST_NODE_MONITOR`).
            detach: start the processes in their own session so they outlive this process
                (cluster-up); otherwise they share our process group and die with Ctrl-C.
        """
        self.work_dir = Path(work_dir).resolve()
        self.bin_dir = bin_dir or cache_dir()
        self.watch_cache = watch_cache
        self.extra_args: dict[str, list[str]] = {
            ETCD: list(etcd_args),
            APISERVER: list(apiserver_args),
            SCHEDULER: list(scheduler_args),
            CONTROLLER_MANAGER: list(controller_manager_args),
        }
        self.controllers = tuple(controllers)
        self.node_monitor = node_monitor
        self.start_timeout = start_timeout
        self.detach = detach
        self.pki = Pki.in_dir(self.work_dir / "pki")
        self.ports: dict[str, int] = {}
        self.timings: dict[str, float] = {}
        self._procs: dict[str, _Process] = {}
        self._port_pool = _Ports()

    # ---- properties

    @property
    def kubeconfig(self) -> Path:
        return self.work_dir / "admin.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self._port('apiserver')}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self._port('etcd-client')}"

    @property
    def kubectl_path(self) -> Path:
        return self.bin_dir / "kubectl"

    def log_path(self, component: str) -> Path:
        if component not in COMPONENTS:
            raise ValueError(f"component must be one of {COMPONENTS}, not {component!r}")
        return self.work_dir / f"{component}.log"

    def log_tail(self, component: str, lines: int = 40) -> str:
        return _tail(self.log_path(component), lines)

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self._procs.items() if p.alive()}

    def running(self) -> bool:
        return bool(self._procs) and all(p.alive() for p in self._procs.values())

    def _port(self, name: str) -> int:
        try:
            return self.ports[name]
        except KeyError:
            raise ControlPlaneError("the control plane has not been started") from None

    # ---- lifecycle

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, *, attempts: int = 3) -> None:
        """Start every component and wait until each is healthy.

        Raises ComponentError (with the log tail) when a component dies or times out. A lost
        port race is retried with fresh ports up to ``attempts`` times.
        """
        missing = missing_binaries(self.bin_dir)
        if missing:
            raise BinariesError(f"{missing} missing in {self.bin_dir}: run {BUILD_SCRIPT}")
        if self._procs:
            raise ControlPlaneError(f"control plane in {self.work_dir} is already started")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.pki.generate()
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                return
            except PortInUseError as err:
                self.stop()
                if attempt == attempts:
                    raise
                log.warning("port clash starting %s, retrying with new ports", err.component)
            except BaseException:
                self.stop()
                raise

    def _start_once(self) -> None:
        t0 = time.monotonic()
        self.timings = {}
        for f in self.work_dir.glob("*.log"):
            f.unlink()
        self.ports = {
            name: self._port_pool.take()
            for name in ("etcd-client", "etcd-peer", "apiserver", "scheduler", "controller-manager")
        }
        etcd_data = self.work_dir / "etcd"
        if etcd_data.exists():
            subprocess.run(["rm", "-rf", str(etcd_data)], check=True)

        self._launch(ETCD, self._etcd_args())
        self._wait_healthy(ETCD, self._etcd_healthy)
        self.timings[ETCD] = time.monotonic() - t0

        write_kubeconfig(self.kubeconfig, server=self.server, pki=self.pki)
        self._start_apiserver(attempts=1)

        t1 = time.monotonic()
        self._launch(SCHEDULER, self._scheduler_args())
        self._launch(CONTROLLER_MANAGER, self._controller_manager_args())
        self._wait_healthy(SCHEDULER, lambda: self._https_ok(self.ports["scheduler"], "/healthz"))
        self._wait_healthy(
            CONTROLLER_MANAGER,
            lambda: self._https_ok(self.ports["controller-manager"], "/healthz"),
        )
        self.timings["scheduler+controller-manager"] = time.monotonic() - t1
        self.timings["total"] = time.monotonic() - t0
        log.info(
            "control plane v%s up at %s in %.1fs (kube-apiserver %.1fs)",
            RELEASE,
            self.server,
            self.timings["total"],
            self.timings[APISERVER],
        )

    def stop(self) -> None:
        """Stop every component (scheduler and controller-manager first, etcd last). Idempotent."""
        errors: list[str] = []
        for name in (SCHEDULER, CONTROLLER_MANAGER, APISERVER, ETCD):
            proc = self._procs.pop(name, None)
            if proc is None:
                continue
            try:
                proc.stop(grace=self.STOP_GRACE)
            except ControlPlaneError as err:
                errors.append(f"{name}: {err}")
        self._write_state()
        if errors:
            raise ControlPlaneError("; ".join(errors))

    # ---- apiserver fault injection

    def stop_apiserver(self, *, kill: bool = False) -> None:
        """Stop kube-apiserver only (SIGKILL at once if ``kill``); etcd keeps the data."""
        proc = self._procs.pop(APISERVER, None)
        if proc is not None:
            proc.stop(grace=0 if kill else self.STOP_GRACE)
        self._write_state()

    def start_apiserver(self) -> None:
        """(Re)start kube-apiserver on the same port, so existing clients reconnect."""
        self._start_apiserver(attempts=20)

    def _start_apiserver(self, *, attempts: int) -> None:
        if APISERVER in self._procs and self._procs[APISERVER].alive():
            raise ControlPlaneError("kube-apiserver is already running")
        t0 = time.monotonic()
        for attempt in range(1, attempts + 1):
            self._launch(APISERVER, self._apiserver_args())
            try:
                self._wait_healthy(APISERVER, self.apiserver_ready)
                break
            except PortInUseError:
                # After a restart another process may hold the port for a moment; at first
                # start, start() retries everything with new ports instead.
                self._procs.pop(APISERVER).stop(grace=0)
                if attempt == attempts:
                    raise
                time.sleep(0.5)
        self.timings[APISERVER] = time.monotonic() - t0
        log.info("kube-apiserver ready in %.1fs", self.timings[APISERVER])

    def restart_apiserver(self, *, kill: bool = False) -> None:
        self.stop_apiserver(kill=kill)
        self.start_apiserver()

    # ---- etcd

    def etcd_request(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST to etcd's HTTP/JSON gateway (``/v3/...``); keys and values are base64."""
        conn = http.client.HTTPConnection("127.0.0.1", self._port("etcd-client"), timeout=30)
        try:
            conn.request(
                "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
            )
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status != 200:
            raise ControlPlaneError(f"etcd {path} -> {resp.status}: {data[:500]!r}")
        result: dict[str, Any] = json.loads(data)
        return result

    def etcd_revision(self) -> int:
        header = self.etcd_request("/v3/kv/range", {"key": "AA==", "keys_only": True})["header"]
        return int(header["revision"])

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision and return it.

        Afterwards a watch or list at an older resourceVersion that reaches etcd gets 410 Gone.
        With the watch cache on, the apiserver may still serve old versions from its cache, so
        fault tests use ``ControlPlane(..., watch_cache=False)``.
        """
        revision = self.etcd_revision()
        self.etcd_request("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    # ---- attach (cluster-up / cluster-down run in different processes)

    def _write_state(self) -> None:
        if not self.work_dir.exists():
            return
        state = {
            "release": RELEASE,
            "bin_dir": str(self.bin_dir),
            "server": f"https://127.0.0.1:{self.ports['apiserver']}" if self.ports else None,
            "ports": self.ports,
            "pids": {name: p.pid for name, p in self._procs.items()},
            "watch_cache": self.watch_cache,
            "extra_args": self.extra_args,
            "controllers": list(self.controllers),
            "node_monitor": asdict(self.node_monitor),
            "timings": self.timings,
        }
        tmp = self.work_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.work_dir / STATE_FILE)

    @classmethod
    def attach(cls, work_dir: Path | str) -> ControlPlane:
        """A handle on a control plane started by another process from its ``state.json``.

        Only processes still running their component's binary are adopted, so a stale state
        file never leads to signalling an unrelated process that reused a pid.
        """
        work = Path(work_dir).resolve()
        try:
            state = json.loads((work / STATE_FILE).read_text())
        except FileNotFoundError:
            raise ControlPlaneError(f"no control plane state in {work}") from None
        extra = state.get("extra_args", {})
        cp = cls(
            work,
            bin_dir=Path(state["bin_dir"]),
            watch_cache=state.get("watch_cache", True),
            etcd_args=extra.get(ETCD, ()),
            apiserver_args=extra.get(APISERVER, ()),
            scheduler_args=extra.get(SCHEDULER, ()),
            controller_manager_args=extra.get(CONTROLLER_MANAGER, ()),
            controllers=state.get("controllers", DEFAULT_CONTROLLERS),
            node_monitor=NodeMonitor(**state.get("node_monitor", {})),
            detach=True,
        )
        cp.ports = {k: int(v) for k, v in state.get("ports", {}).items()}
        cp.timings = state.get("timings", {})
        for name, pid in state.get("pids", {}).items():
            if _pid_runs(int(pid), name):
                cp._procs[name] = _Process(pid=int(pid))
        return cp

    # ---- internals

    def _launch(self, component: str, args: list[str]) -> None:
        binary = self.bin_dir / component
        argv = [str(binary), *args, *self.extra_args[component]]
        with self.log_path(component).open("ab") as logf:
            logf.write(f"# {time.strftime('%H:%M:%S')} {' '.join(argv)}\n".encode())
            logf.flush()
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                cwd=self.work_dir,
                start_new_session=self.detach,
            )
        self._procs[component] = _Process(pid=popen.pid, popen=popen)
        self._write_state()

    def _wait_healthy(self, component: str, probe: Callable[[], bool]) -> None:
        deadline = time.monotonic() + self.start_timeout
        proc = self._procs[component]
        delay = 0.05
        while True:
            if not proc.alive():
                tail = self.log_tail(component, 40)
                reason = f"exited with status {proc.returncode()} during start-up"
                if _ADDRESS_IN_USE in tail:
                    raise PortInUseError(component, reason, tail)
                raise ComponentError(component, reason, tail)
            if probe():
                return
            if time.monotonic() >= deadline:
                raise ComponentError(
                    component,
                    f"was not healthy after {self.start_timeout:.0f}s",
                    self.log_tail(component, 40),
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _etcd_healthy(self) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.ports["etcd-client"], timeout=2)
            conn.request("GET", "/health")
            resp = conn.getresponse()
            body = resp.read()
            conn.close()
        except OSError:
            return False
        return resp.status == 200 and b'"health":"true"' in body

    def apiserver_ready(self) -> bool:
        """True if kube-apiserver answers /readyz with 200 to the admin credentials."""
        if "apiserver" not in self.ports or not self.pki.admin_cert.exists():
            return False
        return self._https_ok(self.ports["apiserver"], "/readyz", self.pki.client_ssl_context())

    @staticmethod
    def _https_ok(port: int, path: str, context: ssl.SSLContext | None = None) -> bool:
        if context is None:
            # scheduler and controller-manager serve a self-signed certificate, and /healthz
            # needs no credentials.
            context = ssl._create_unverified_context()
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            conn.close()
        except OSError:
            return False
        return resp.status == 200

    def _etcd_args(self) -> list[str]:
        client = f"http://127.0.0.1:{self.ports['etcd-client']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        return [
            "--name=default",
            f"--data-dir={self.work_dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--unsafe-no-fsync",
            "--watch-progress-notify-interval=5s",
            "--log-level=warn",
        ]

    def _apiserver_args(self) -> list[str]:
        pki = self.pki
        args = [
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['apiserver']}",
            # Newer apiservers refuse a loopback advertise address unless the endpoint
            # reconciler is off.
            "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--cert-dir={self.work_dir / 'certs'}",
            f"--client-ca-file={pki.ca_cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=RBAC",
            # No token controller, so no ServiceAccount admission. TaintNodesByCondition stays
            # on, as in every cluster: new Nodes start tainted not-ready:NoSchedule until the
            # node lifecycle controller sees them Ready.
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            "--profiling=false",
            # Without this a TERM waits up to 60s for the scheduler's and controller-manager's
            # watches to drain.
            "--shutdown-watch-termination-grace-period=2s",
        ]
        if not self.watch_cache:
            args.append("--watch-cache=false")
        return args

    def _component_auth_args(self, port: int) -> list[str]:
        kc = str(self.kubeconfig)
        return [
            f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.work_dir / 'certs'}",
        ]

    def _scheduler_args(self) -> list[str]:
        return self._component_auth_args(self.ports["scheduler"])

    def _controller_manager_args(self) -> list[str]:
        return [
            *self._component_auth_args(self.ports["controller-manager"]),
            f"--controllers={','.join(self.controllers)}",
            "--use-service-account-credentials=false",
            *self.node_monitor.args(),
        ]


@contextlib.contextmanager
def running(work_dir: Path | str, **options: Any) -> Iterator[ControlPlane]:
    """Context manager: a started control plane, stopped on exit."""
    cp = ControlPlane(work_dir, **options)
    cp.start()
    try:
        yield cp
    finally:
        cp.stop()
