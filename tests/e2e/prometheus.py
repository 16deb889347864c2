"""A real Prometheus for end-to-end tests: built once by hack/prometheus/build.sh (cached per
user; a failed build fails the test, it never skips it), started on a free loopback port with a
temporary data directory, scraping `karpy run` every second and evaluating rule files every
second, and queried through its HTTP API."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.karpy_process import REPO, free_port

__all__ = ["BUILD", "PrometheusServer", "prometheus_bin_dir", "promtool_check_rules"]

BUILD = REPO / "hack" / "prometheus" / "build.sh"
SCRAPE_INTERVAL = "1s"

_bin_dir: Path | None = None


def prometheus_bin_dir() -> Path:
    """The directory holding `prometheus` and `promtool`, built the first time it is asked for
    (several minutes on a cold cache; reused after)."""
    global _bin_dir
    if _bin_dir is None:
        proc = subprocess.run(
            ["nice", "-n", "10", str(BUILD)],
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{BUILD} failed:\n{proc.stderr[-3000:]}")
        _bin_dir = Path(proc.stdout.strip().splitlines()[-1])
    return _bin_dir


def promtool_check_rules(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(prometheus_bin_dir() / "promtool"), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass
class PrometheusServer:
    """One Prometheus scraping `targets` (host:port) as job `karpy`, with `rule_groups`."""

    workdir: Path
    targets: list[str]
    rule_groups: list[dict[str, Any]] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PrometheusServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        rules = self.workdir / "rules.yaml"
        rules.write_text(yaml.safe_dump({"groups": self.rule_groups}))
        config = {
            "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": "karpy",
                    "scrape_interval": SCRAPE_INTERVAL,
                    "scrape_timeout": SCRAPE_INTERVAL,
                    "static_configs": [{"targets": self.targets}],
                }
            ],
        }
        (self.workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        with (self.workdir / "prometheus.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(prometheus_bin_dir() / "prometheus"),
                    f"--config.file={self.workdir / 'prometheus.yml'}",
                    f"--storage.tsdb.path={self.workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=1h",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"prometheus not ready in 120 s: {self.log_tail()}")

    def log_tail(self) -> str:
        path = self.workdir / "prometheus.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def _get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=30) as r:
            body = json.loads(r.read())
        if body.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector (or scalar as one element) `expr` evaluates to now."""
        data = self._get("/api/v1/query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def query_range(self, expr: str, seconds: float) -> list[dict[str, Any]]:
        """The range `expr` evaluates to over the last `seconds`, one step a second (what a
        Grafana time-series panel asks for)."""
        now = time.time()
        data = self._get(
            "/api/v1/query_range",
            query=expr,
            start=f"{now - seconds:.3f}",
            end=f"{now:.3f}",
            step="1",
        )
        result: list[dict[str, Any]] = data["result"]
        return result

    def alerts(self) -> dict[str, str]:
        """Alert name -> state (`pending`, `firing`) of the active alerts (`firing` if any of
        the alert's series fires)."""
        out: dict[str, str] = {}
        for a in self.active_alerts():
            name = a["labels"]["alertname"]
            if out.get(name) != "firing":
                out[name] = a["state"]
        return out

    def active_alerts(self) -> list[dict[str, Any]]:
        """The active alerts as the API lists them (`labels`, `state`, `value`, ...)."""
        alerts: list[dict[str, Any]] = self._get("/api/v1/alerts")["alerts"]
        return alerts

    def targets_up(self) -> bool:
        active = self._get("/api/v1/targets")["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)
