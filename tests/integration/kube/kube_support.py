"""Helpers for the controller-runtime integration tests: `karpy run` subprocesses, a TCP proxy
that can cut a process off from the apiserver, and kubeconfig variants."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from karpy.settings import SETTINGS

REPO = Path(__file__).resolve().parents[3]
LEADER_METRIC = re.compile(r'^leader_election_master_status\{name="([^"]+)"\}\s+(\S+)', re.M)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubeconfig_variant(
    source: str | Path,
    target: Path,
    *,
    server: str | None = None,
    impersonate: str | None = None,
) -> Path:
    """Copy a kubeconfig, pointing it at another server and/or impersonating a user."""
    config: dict[str, Any] = yaml.safe_load(Path(source).read_text())
    for cluster in config["clusters"]:
        if server is not None:
            cluster["cluster"]["server"] = server
    for user in config["users"]:
        if impersonate is not None:
            user["user"]["as"] = impersonate
    target.write_text(yaml.safe_dump(config))
    return target


class KarpyRun:
    """One `karpy run` process with loopback ports and its log in a file."""

    def __init__(self, *, kubeconfig: str | Path, log_path: Path, env: Mapping[str, str]) -> None:
        self.metrics_port = free_port()
        self.probe_port = free_port()
        self.log_path = log_path
        base = {k: v for k, v in os.environ.items() if k not in {s.env for s in SETTINGS}}
        self.env = {
            **base,
            "KUBECONFIG": str(kubeconfig),
            "PROVIDER": "kwok",
            "BIND_ADDRESS": "127.0.0.1",
            "METRICS_PORT": str(self.metrics_port),
            "HEALTH_PROBE_PORT": str(self.probe_port),
            "LOG_LEVEL": "info",
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> KarpyRun:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "karpy.cli", "run"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
        log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def _get(self, port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""  # not listening (yet)

    def readyz(self) -> int:
        return self._get(self.probe_port, "/readyz")[0]

    def healthz(self) -> int:
        return self._get(self.probe_port, "/healthz")[0]

    def metrics(self) -> str:
        return self._get(self.metrics_port, "/metrics")[1]

    def leading(self) -> bool | None:
        """True/False from leader_election_master_status; None when unreachable."""
        text = self.metrics()
        for _name, value in LEADER_METRIC.findall(text):
            return float(value) == 1.0
        return None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            if self.wait(30) is None:
                self.proc.kill()
                self.proc.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target; `cut()` drops every connection and refuses new
    ones, as a network partition would (TLS passes through untouched)."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self.target = (parts.hostname or "127.0.0.1", int(parts.port or 443))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._sockets.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._sockets.clear()


def wait_for(
    predicate: Any, *, timeout: float, interval: float = 0.2, what: str = "condition"
) -> float:
    """Poll until `predicate()` is truthy; return the seconds it took."""
    started = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
