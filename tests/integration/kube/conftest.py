"""Fixtures for the controller-runtime tests against the session's real control plane."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubetest import Kubectl

from karpy.kube.client import Client

ROOT = Path(__file__).resolve().parents[3]
CRD_NAMES = (
    "nodepools.karpenter.sh",
    "nodeclaims.karpenter.sh",
    "ec2nodeclasses.karpenter.k8s.aws",
    "kwoknodeclasses.karpenter.kwok.sh",
)


@pytest.fixture(scope="session")
def kube_crds(kubectl: Kubectl) -> None:
    """Karpenter's CRDs, so a full `karpy run` can sync every informer (idempotent)."""
    kubectl("apply", "-f", str(ROOT / "manifests" / "crds"))
    kubectl(
        "wait",
        "--for=condition=Established",
        *(f"crd/{name}" for name in CRD_NAMES),
        "--timeout=60s",
        timeout=90,
    )


@pytest.fixture
async def client(kubeconfig: str) -> AsyncIterator[Client]:
    async with await Client.connect(kubeconfig=kubeconfig) as c:
        yield c
