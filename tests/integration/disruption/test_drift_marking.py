"""The drift controller on a cache that lags its own writes: one log line per drift, not one per
reconcile."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS, NODEPOOLS
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.controllers.nodeclaim.disruption.drift import DriftController
from karpy.kube import Informer
from tests.integration.disruption.support import Env, initialized
from tests.kit import conditions, kwok_nodeclass, nodeclaim, nodepool

pytestmark = pytest.mark.timeout(120)


async def test_a_drift_seen_again_through_a_stale_cache_is_logged_once(env: Env) -> None:
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool())  # linux only
    await env.create(NODECLAIMS, nodeclaim("claim", labels={"kubernetes.io/os": "windows"}))
    claim = await env.patch_status(NODECLAIMS, "claim", initialized("2026-01-01T00:00:00Z"))
    # Caches filled once and never watched: every reconcile sees the claim as it was before
    # the controller's own write, as a lagging informer does.
    claims = Informer(client=env.client, resource=NODECLAIMS)
    claims.replace([claim], "0")
    pools = Informer(client=env.client, resource=NODEPOOLS)
    pools.replace([await env.get(NODEPOOLS, "pool")], "0")
    drift = DriftController(
        client=env.client,
        nodeclaims=claims,
        nodepools=pools,
        cloud_provider=KwokCloudProvider(
            client=env.client, cache=env.cache, instance_types=kwok_instance_types()
        ),
    )

    with capture_logs() as logs:
        for _ in range(3):
            await drift.reconcile("claim")

    marked = [e for e in logs if e["event"] == "marking drifted"]
    assert len(marked) == 1, marked
    assert marked[0]["reason"] == "RequirementsDrifted"
    stored = conditions(await env.get(NODECLAIMS, "claim"))
    assert stored["Drifted"]["status"] == "True"
    assert stored["Drifted"]["reason"] == "RequirementsDrifted"
