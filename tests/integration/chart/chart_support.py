"""Running the project's helm (built by hack/helm/build.sh) on the charts, and reading what it
renders."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHARTS = REPO / "manifests" / "charts"
CHART = CHARTS / "karpy"
CRD_CHART = CHARTS / "karpy-crd"
HELM_BUILD = REPO / "hack" / "helm" / "build.sh"

JSON = dict[str, Any]


class HelmError(subprocess.CalledProcessError):
    def __str__(self) -> str:
        return f"{' '.join(map(str, self.cmd))} exited {self.returncode}: {self.stderr.strip()}"


class Helm:
    """One helm binary with its own config, cache and data directories (never the user's)."""

    def __init__(self, binary: Path, home: Path, kubeconfig: str | None = None) -> None:
        self.binary = str(binary)
        self.home = home
        self.kubeconfig = kubeconfig
        home.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.home),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_DATA_HOME": str(self.home / "data"),
        }

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self.binary, *args]
        if self.kubeconfig is not None:
            cmd.append(f"--kubeconfig={self.kubeconfig}")
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=self.env(), check=False
        )
        if check and proc.returncode != 0:
            raise HelmError(proc.returncode, cmd, proc.stdout, proc.stderr)
        return proc

    def values_file(self, values: Mapping[str, Any], name: str = "values.json") -> Path:
        """`values` as a file for `-f` (JSON is YAML), so no --set escaping is involved."""
        path = self.home / name
        path.write_text(json.dumps(values))
        return path

    def template(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        chart: Path = CHART,
        release: str = "karpenter",
        namespace: str = "kube-system",
        sets: Sequence[str] = (),
        extra: Sequence[str] = (),
    ) -> list[JSON]:
        args = ["template", release, str(chart), f"--namespace={namespace}", *extra]
        if values:
            args += ["-f", str(self.values_file(values))]
        for item in sets:
            args += ["--set", item]
        return documents(self(*args).stdout)

    def template_error(self, *sets: str, values: Mapping[str, Any] | None = None) -> str:
        """The error of a `helm template` that must fail."""
        args = ["template", "karpenter", str(CHART)]
        if values:
            args += ["-f", str(self.values_file(values))]
        for item in sets:
            args += ["--set", item]
        proc = self(*args, check=False)
        assert proc.returncode != 0, f"helm template {' '.join(sets)} should have failed"
        return proc.stderr


def documents(text: str) -> list[JSON]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def by_kind(docs: Sequence[JSON]) -> dict[tuple[str, str], JSON]:
    """(kind, name) -> object."""
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def one(docs: Sequence[JSON], kind: str) -> JSON:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"{len(found)} objects of kind {kind}"
    return found[0]


def container(docs: Sequence[JSON]) -> JSON:
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    containers: list[JSON] = pod["containers"]
    assert len(containers) == 1
    return containers[0]


def rules(role: JSON) -> set[tuple[str, str, str, str]]:
    """(apiGroup, resource, verb, resourceName or "") for every rule of a Role/ClusterRole."""
    out: set[tuple[str, str, str, str]] = set()
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in rule.get("resourceNames") or [""]:
                        out.add((group, resource, verb, name))
    return out
