"""A real `karpy run` process for end-to-end tests, and reading its /metrics from outside.

`KarpyProcess` starts karpy as a subprocess (PROVIDER=kwok, loopback ports chosen at random,
settings overrides as environment variables), writes its logs to a file, and can stop it
gracefully (SIGTERM), kill it (`kill -9`, for crash tests) or start it again with the same
settings. `parse_metrics` reads the Prometheus text format; `cloudprovider_calls` counts
`karpy_cloudprovider_calls_total`, which is how tests count launches from outside.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from karpy.settings import SETTINGS
from tests.e2e.faulty_karpy import FAULTS_ENV

__all__ = [
    "KarpyProcess",
    "Sample",
    "cloudprovider_calls",
    "free_port",
    "metric_value",
    "parse_metrics",
]

REPO = Path(__file__).resolve().parents[2]
EVALUATION_DURATION = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> list[Sample]:
    """Samples of a Prometheus text exposition (comments skipped)."""
    out: list[Sample] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        labels = {
            k: v.replace('\\"', '"').replace("\\\\", "\\")
            for k, v in _LABEL.findall(match.group(3) or "")
        }
        out.append(Sample(match.group(1), labels, float(match.group(4))))
    return out


def metric_value(samples: list[Sample], name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels` (0 when none)."""
    return sum(
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def cloudprovider_calls(samples: list[Sample], method: str, outcome: str | None = None) -> float:
    """`karpy_cloudprovider_calls_total` for one method (and outcome, if given)."""
    labels = {"method": method}
    if outcome is not None:
        labels["outcome"] = outcome
    return metric_value(samples, "karpy_cloudprovider_calls_total", **labels)


@dataclass
class KarpyProcess:
    """One `karpy run` subprocess against a kubeconfig."""

    kubeconfig: str
    log_path: Path
    settings: dict[str, str] = field(default_factory=dict)
    name: str = field(default_factory=lambda: f"karpy-e2e-{uuid.uuid4().hex[:6]}")
    metrics_port: int = field(default_factory=free_port)
    probe_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def entry_module(self) -> str:
        """`karpy.cli`, or the test entry that wraps the provider in a fault plan."""
        return "tests.e2e.faulty_karpy" if FAULTS_ENV in self.settings else "karpy.cli"

    def environment(self) -> dict[str, str]:
        ours = {spec.env for spec in SETTINGS}
        env = {k: v for k, v in os.environ.items() if not k.startswith("KARPY_") and k not in ours}
        env.update(
            {
                "KUBECONFIG": self.kubeconfig,
                "PROVIDER": "kwok",
                "BIND_ADDRESS": "127.0.0.1",
                "METRICS_PORT": str(self.metrics_port),
                "HEALTH_PROBE_PORT": str(self.probe_port),
                "POD_NAME": self.name,
                "DISABLE_LEADER_ELECTION": "true",
                "LOG_LEVEL": "debug",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(self.settings)
        return env

    def start(self) -> KarpyProcess:
        """Start (or start again) with the same ports and settings."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"\n===== start #{self.starts + 1} of {self.name} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.entry_module(), "run"],
                cwd=REPO,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _url(self, port: int, path: str) -> str:
        return f"http://127.0.0.1:{port}{path}"

    def _get(self, port: int, path: str, timeout: float = 5.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self._url(port, path), timeout=timeout) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until /readyz answers 200 (every informer synced); fails if the process exits."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.running:
                raise AssertionError(
                    f"{self.name} exited with {self.returncode} before becoming ready:\n"
                    f"{self.log_tail()}"
                )
            with contextlib.suppress(OSError):
                status, _ = self._get(self.probe_port, "/readyz", timeout=2.0)
                if status == 200:
                    return
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{self.name} not ready after {timeout:.0f}s:\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def metrics_text(self) -> str:
        status, body = self._get(self.metrics_port, "/metrics")
        if status != 200:
            raise AssertionError(f"/metrics answered {status}")
        return body

    def metrics(self) -> list[Sample]:
        return parse_metrics(self.metrics_text())

    def disruption_passes(self) -> int:
        """How many complete disruption passes the process has run: passes in which every
        method, single-node consolidation (always the last) included, was evaluated. Read from
        the count of `karpenter_voluntary_disruption_decision_evaluation_duration_seconds` for
        that last method; a pass that started a command at an earlier method ends there and is
        not counted."""
        return int(
            metric_value(
                self.metrics(),
                f"{EVALUATION_DURATION}_count",
                reason="underutilized",
                consolidation_type="single",
            )
        )

    def is_leader(self) -> bool:
        """The process's own view (`leader_election_master_status`); True without election."""
        samples = self.metrics()
        leader = [s for s in samples if s.name == "leader_election_master_status"]
        if not leader:
            return self.settings.get("DISABLE_LEADER_ELECTION", "true") == "true"
        return any(s.value == 1.0 for s in leader)

    @property
    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc is not None else None

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait (SIGKILL after `timeout`)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """`kill -9`: no shutdown, no lease release (crash tests)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 80) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def log_lines(self, message: str) -> list[str]:
        """Log lines mentioning `message` (e.g. "created nodeclaim")."""
        return [line for line in self.log_text().splitlines() if message in line]


@contextlib.contextmanager
def running(process: KarpyProcess, *, ready_timeout: float = 60.0) -> Iterator[KarpyProcess]:
    process.start()
    try:
        process.wait_ready(ready_timeout)
        yield process
    finally:
        process.stop()
