"""Fixtures for running controllers in-process against the session's real control plane."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubetest import Kubectl

from tests.integration.disruption.support import Env
from tests.integration.support import running


@pytest.fixture
async def env(
    kubeconfig: str, kubectl: Kubectl, crds: None, clean_cluster: None
) -> AsyncIterator[Env]:
    async with running(Env, kubeconfig=kubeconfig, kubectl=kubectl) as environment:
        yield environment
