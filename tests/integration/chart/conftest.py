"""Fixtures for the chart tests: the project's helm binary (built once into the control plane
binary cache by hack/helm/build.sh; a failed build fails the tests, it never skips them), a
helm that renders offline, and one that talks to the session's control plane."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.chart.chart_support import HELM_BUILD, Helm


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    proc = subprocess.run(
        [str(HELM_BUILD)], capture_output=True, text=True, timeout=1800, check=False
    )
    if proc.returncode != 0:
        pytest.fail(f"{HELM_BUILD} failed:\n{proc.stderr[-3000:]}", pytrace=False)
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def helm(helm_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """helm for lint and template (no cluster)."""
    return Helm(helm_binary, tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="session")
def cluster_helm(
    helm_binary: Path, tmp_path_factory: pytest.TempPathFactory, kubeconfig: str
) -> Helm:
    """helm against the session's control plane."""
    return Helm(helm_binary, tmp_path_factory.mktemp("helm-cluster"), kubeconfig)
