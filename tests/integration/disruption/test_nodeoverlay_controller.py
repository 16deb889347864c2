"""The NodeOverlay controller against a real apiserver: overlays that apply are Ready, an overlay
that conflicts with another of the same weight is `ValidationSucceeded=False` with reason
Conflict (and becomes Ready once the weights differ), and an invalid requirement is reported
with reason RuntimeValidation naming the field."""

from __future__ import annotations

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODEOVERLAYS, NODEPOOLS
from karpy.cloudprovider.kwok.catalog import KWOK_LABEL_FAMILY, kwok_instance_types
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.controllers.nodeoverlay import NodeOverlayStatusController
from tests.integration.disruption.support import Env
from tests.kit import conditions, kwok_nodeclass, nodeoverlay, nodepool, status_of

pytestmark = pytest.mark.timeout(120)

M = {"key": KWOK_LABEL_FAMILY, "operator": "In", "values": ["m"]}
C_OR_M = {"key": KWOK_LABEL_FAMILY, "operator": "In", "values": ["c", "m"]}


async def _controller(env: Env) -> NodeOverlayStatusController:
    await env.informer(KWOKNODECLASSES)
    controller = NodeOverlayStatusController(
        client=env.client,
        overlays=await env.informer(NODEOVERLAYS),
        nodepools=await env.informer(NODEPOOLS),
        cloud_provider=KwokCloudProvider(
            client=env.client, cache=env.cache, instance_types=kwok_instance_types()
        ),
    )
    env.run(controller)
    return controller


async def test_equal_weights_conflict_and_the_second_is_reported(env: Env) -> None:
    controller = await _controller(env)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool("pool"))
    await env.create(
        NODEOVERLAYS, nodeoverlay("zz-cheap", requirements=[M], priceAdjustment="-50%", weight=5)
    )
    await env.create(
        NODEOVERLAYS, nodeoverlay("aa-dear", requirements=[C_OR_M], priceAdjustment="+5%", weight=5)
    )
    applied = await env.cached(
        controller.overlays, "zz-cheap", lambda o: status_of(o, "Ready") == "True"
    )
    assert conditions(applied)["ValidationSucceeded"]["status"] == "True"
    ignored = await env.cached(
        controller.overlays, "aa-dear", lambda o: status_of(o, "Ready") == "False"
    )
    validation = conditions(ignored)["ValidationSucceeded"]
    assert (validation["status"], validation["reason"]) == ("False", "Conflict")
    assert validation["message"] == "conflict with another overlay"

    # a lower weight does not conflict: it only prices what the higher one left (c)
    await env.client.patch(NODEOVERLAYS, "aa-dear", {"spec": {"weight": 1}})
    await env.cached(controller.overlays, "aa-dear", lambda o: status_of(o, "Ready") == "True")


async def test_an_invalid_requirement_fails_runtime_validation(env: Env) -> None:
    controller = await _controller(env)
    restricted = {"key": "karpenter.sh/custom", "operator": "Exists"}
    await env.create(
        NODEOVERLAYS, nodeoverlay("bad", requirements=[restricted], capacity={"example.com/x": "1"})
    )
    bad = await env.cached(controller.overlays, "bad", lambda o: status_of(o, "Ready") == "False")
    validation = conditions(bad)["ValidationSucceeded"]
    assert validation["reason"] == "RuntimeValidation"
    assert "spec.requirements[0].key" in validation["message"]
    # selecting on the NodePool is allowed (unlike in a NodePool's own requirements)
    by_pool = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["pool"]}
    await env.create(
        NODEOVERLAYS,
        nodeoverlay("by-pool", requirements=[by_pool], capacity={"example.com/x": "1"}),
    )
    await env.cached(controller.overlays, "by-pool", lambda o: status_of(o, "Ready") == "True")
