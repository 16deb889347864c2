"""Fixtures for the chart tests: the project's helm binary (built once into the control plane
binary cache by hack/helm/build.sh; a failed build fails the tests, it never skips them), a
helm that renders offline, and one that talks to the session's control plane."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubetest import Kubectl, delete_namespace

from tests.integration.chart.chart_support import HELM_BUILD, Helm

_built: Path | None = None
_error: str | None = None


def _build() -> None:
    global _built, _error
    if _built is None and _error is None:
        proc = subprocess.run(
            [str(HELM_BUILD)], capture_output=True, text=True, timeout=1800, check=False
        )
        if proc.returncode == 0:
            _built = Path(proc.stdout.strip().splitlines()[-1])
        else:
            _error = f"{HELM_BUILD} failed:\n{proc.stderr[-3000:]}"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build helm before the first test, so a first build is not charged to a test timeout."""
    if session.config.option.collectonly:
        return
    if any("helm_binary" in getattr(i, "fixturenames", ()) for i in session.items):
        _build()  # a failure is reported by every test that needs helm


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    _build()
    if _built is None:
        pytest.fail(str(_error), pytrace=False)
    return _built


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


@pytest.fixture
def release_namespace(kubectl: Kubectl) -> Iterator[str]:
    """A namespace helm creates (--create-namespace), removed after the test."""
    name = f"karpenter-{uuid.uuid4().hex[:6]}"
    yield name
    delete_namespace(kubectl, name)
