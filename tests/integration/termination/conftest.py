"""Fixtures for the termination tests: CRDs installed, a clean cluster, and an `Env` whose
informer cache runs for the test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubetest import Kubectl

from tests.integration.support import running
from tests.integration.termination.support import Env


@pytest.fixture
async def env(
    kubeconfig: str, kubectl: Kubectl, namespace: str, crds: None, clean_cluster: None
) -> AsyncIterator[Env]:
    async with running(Env, kubeconfig=kubeconfig, kubectl=kubectl, namespace=namespace) as env_:
        yield env_
