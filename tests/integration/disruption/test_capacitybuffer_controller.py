"""The CapacityBuffer status controller against a real apiserver, with Karpenter's reasons: a
buffer on a PodTemplate that does not exist yet is `ReadyForProvisioning=False`
`PodTemplateNotFound` and turns `Resolved` once the template is created; a buffer on a
Deployment that does not exist yet is `ScalableRefNotFound` until it does; a `scalableRef`
buffer gets a PodTemplate copied from the Deployment (owned by the buffer) and a percentage of
the Deployment's replicas, which follows a scale. `Provisioning` is the provisioner's to write,
never this controller's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from karpy.apis.descriptors import CAPACITYBUFFERS
from karpy.controllers.capacitybuffer import CapacityBufferStatusController
from karpy.kube.resources import NAMESPACES, PODTEMPLATES, Resource
from tests.integration.disruption.support import Env
from tests.kit import capacitybuffer, conditions, podtemplate

pytestmark = pytest.mark.timeout(120)
DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments", namespaced=True)


@pytest.fixture
async def namespace(env: Env) -> AsyncIterator[str]:
    name = f"cb-{uuid.uuid4().hex[:8]}"
    await env.client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    await env.client.delete(NAMESPACES, name)


async def _controller(env: Env) -> CapacityBufferStatusController:
    controller = CapacityBufferStatusController(
        client=env.client,
        buffers=await env.informer(CAPACITYBUFFERS),
        pod_templates=await env.informer(PODTEMPLATES),
        resync=0.5,
    )
    env.run(controller)
    return controller


def _ready(status: str) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        found = conditions(obj).get("ReadyForProvisioning")
        return found is not None and found["status"] == status

    return check


async def test_a_missing_template_is_reported_until_it_exists(env: Env, namespace: str) -> None:
    controller = await _controller(env)
    await env.create(
        CAPACITYBUFFERS,
        capacitybuffer("room", namespace, podTemplateRef={"name": "chunk"}, replicas=3),
    )
    key = f"{namespace}/room"
    missing = await env.cached(controller.buffers, key, _ready("False"))
    ready = conditions(missing)["ReadyForProvisioning"]
    assert ready["reason"] == "PodTemplateNotFound"
    assert ready["message"] == 'podtemplates "chunk" not found'
    assert "Provisioning" not in conditions(missing)
    assert "replicas" not in missing["status"]

    template = await env.create(PODTEMPLATES, podtemplate("chunk", namespace, cpu="1"))
    done = await env.cached(controller.buffers, key, _ready("True"))
    status = done["status"]
    assert status["podTemplateRef"] == {"name": "chunk"}
    assert status["replicas"] == 3
    assert status["podTemplateGeneration"] == template["metadata"].get("generation")
    assert status["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    resolved = conditions(done)["ReadyForProvisioning"]
    assert (resolved["reason"], resolved["message"]) == (
        "Resolved",
        "Pod template resolved successfully",
    )
    assert "Provisioning" not in conditions(done)


async def test_a_missing_scalable_ref_recovers_to_resolved_once_it_exists(
    env: Env, namespace: str
) -> None:
    controller = await _controller(env)
    await env.create(
        CAPACITYBUFFERS,
        capacitybuffer(
            "later",
            namespace,
            scalableRef={"apiGroup": "apps", "kind": "Deployment", "name": "late"},
            replicas=2,
        ),
    )
    key = f"{namespace}/later"
    missing = await env.cached(controller.buffers, key, _ready("False"))
    ready = conditions(missing)["ReadyForProvisioning"]
    assert (ready["reason"], ready["message"]) == (
        "ScalableRefNotFound",
        'deployments.apps "late" not found',
    )
    await env.create(
        DEPLOYMENTS,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "late", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "late"}},
                "template": podtemplate("late", namespace, cpu="250m")["template"],
            },
        },
    )
    done = await env.cached(controller.buffers, key, _ready("True"))
    assert conditions(done)["ReadyForProvisioning"]["reason"] == "Resolved"
    assert done["status"]["replicas"] == 2


async def test_a_workload_buffer_copies_its_template_and_follows_its_replicas(
    env: Env, namespace: str
) -> None:
    controller = await _controller(env)
    template = podtemplate("web", namespace, cpu="500m")["template"]
    web = await env.create(
        DEPLOYMENTS,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template,
            },
        },
    )
    buffer = await env.create(
        CAPACITYBUFFERS,
        capacitybuffer(
            "half",
            namespace,
            scalableRef={"apiGroup": "apps", "kind": "Deployment", "name": "web"},
            percentage=50,
        ),
    )
    key = f"{namespace}/half"
    done = await env.cached(controller.buffers, key, _ready("True"))
    assert done["status"]["replicas"] == 2
    name = "capacitybuffer-half-pod-template"
    assert done["status"]["podTemplateRef"] == {"name": name}
    copied = await env.get(PODTEMPLATES, name, namespace)
    # the Deployment's template as the apiserver stored it (defaults filled in)
    assert copied["template"]["spec"] == web["spec"]["template"]["spec"]
    assert copied["template"]["metadata"]["labels"] == template["metadata"]["labels"]
    (owner,) = copied["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "CapacityBuffer",
        "half",
        buffer["metadata"]["uid"],
        True,
    )
    assert done["status"]["podTemplateGeneration"] == copied["metadata"].get("generation")

    await env.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, namespace=namespace)
    await env.cached(  # 50% of 5, rounded up
        controller.buffers,
        key,
        lambda b: (b.get("status") or {}).get("replicas") == 3,
    )
    # resyncs leave an unchanged template alone (no write each time)
    again = await env.get(PODTEMPLATES, name, namespace)
    assert again["metadata"]["resourceVersion"] == copied["metadata"]["resourceVersion"]
