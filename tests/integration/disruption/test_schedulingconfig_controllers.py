"""SchedulingConfig controllers against a real apiserver: the config's status (the NodePools it
applies to, ValidationSucceeded and Ready, observedGeneration) and the NodePool condition
SchedulingConfigCompatible, which names the config and the key it leaves unsatisfiable."""

from __future__ import annotations

import pytest

from karpy.apis.descriptors import KWOKNODECLASSES, NODEPOOLS, SCHEDULINGCONFIGS
from karpy.controllers.schedulingconfig import (
    NodePoolSchedulingConfigController,
    SchedulingConfigStatusController,
)
from tests.integration.disruption.support import Env
from tests.kit import LINUX, conditions, kwok_nodeclass, nodepool, schedulingconfig, status_of

pytestmark = pytest.mark.timeout(120)

ARM64 = {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
COMPATIBLE = "SchedulingConfigCompatible"


async def _controllers(
    env: Env,
) -> tuple[SchedulingConfigStatusController, NodePoolSchedulingConfigController]:
    configs = await env.informer(SCHEDULINGCONFIGS)
    pools = await env.informer(NODEPOOLS)
    status = SchedulingConfigStatusController(client=env.client, configs=configs, nodepools=pools)
    compatibility = NodePoolSchedulingConfigController(
        client=env.client, nodepools=pools, configs=configs
    )
    env.run(status)
    env.run(compatibility)
    return status, compatibility


async def test_status_lists_the_nodepools_of_its_nodeclass(env: Env) -> None:
    status, _ = await _controllers(env)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool("pool"))
    await env.create(NODEPOOLS, nodepool("elsewhere", nodeclass="other"))
    await env.create(SCHEDULINGCONFIGS, schedulingconfig())
    config = await env.cached(status.configs, "default", lambda c: status_of(c, "Ready") == "True")
    assert config["status"]["nodePools"] == ["pool"]
    assert config["status"]["observedGeneration"] == config["metadata"]["generation"]
    assert conditions(config)["ValidationSucceeded"]["status"] == "True"

    # A new NodePool of that NodeClass joins the list; a config without nodeClassRef takes all.
    await env.create(NODEPOOLS, nodepool("second"))
    await env.cached(
        status.configs, "default", lambda c: c["status"].get("nodePools") == ["pool", "second"]
    )
    await env.create(SCHEDULINGCONFIGS, schedulingconfig("everywhere", nodeclass=None))
    everywhere = await env.cached(
        status.configs, "everywhere", lambda c: status_of(c, "Ready") == "True"
    )
    assert everywhere["status"]["nodePools"] == ["elsewhere", "pool", "second"]

    # A config that matches nothing is not an error.
    await env.create(SCHEDULINGCONFIGS, schedulingconfig("nothing", nodeclass="absent"))
    nothing = await env.cached(status.configs, "nothing", lambda c: status_of(c, "Ready") == "True")
    assert nothing["status"]["nodePools"] == []


async def test_parameters_outside_default_fail_validation(env: Env) -> None:
    status, _ = await _controllers(env)
    await env.create(SCHEDULINGCONFIGS, schedulingconfig("team-a", batchIdleDuration="5s"))
    config = await env.cached(status.configs, "team-a", lambda c: status_of(c, "Ready") == "False")
    validation = conditions(config)["ValidationSucceeded"]
    assert validation["status"] == "False"
    assert validation["reason"] == "SchedulingConfigValidationFailed"
    assert "spec.batchIdleDuration" in validation["message"]
    assert "'default'" in validation["message"]
    assert conditions(config)["Ready"]["message"] == "ValidationSucceeded=False"

    # Moving the parameter off fixes it, and observedGeneration follows the edit.
    await env.client.patch(SCHEDULINGCONFIGS, "team-a", {"spec": {"batchIdleDuration": None}})
    config = await env.cached(status.configs, "team-a", lambda c: status_of(c, "Ready") == "True")
    assert config["status"]["observedGeneration"] == config["metadata"]["generation"] == 2


async def test_nodepool_condition_names_config_and_key(env: Env) -> None:
    _, compatibility = await _controllers(env)
    await env.create(KWOKNODECLASSES, kwok_nodeclass())
    await env.create(NODEPOOLS, nodepool("arm", requirements=[*LINUX, ARM64]))
    await env.create(NODEPOOLS, nodepool("any"))
    await env.create(NODEPOOLS, nodepool("untouched", nodeclass="other"))
    await env.create(SCHEDULINGCONFIGS, schedulingconfig())

    arm = await env.cached(
        compatibility.nodepools, "arm", lambda p: status_of(p, COMPATIBLE) == "False"
    )
    condition = conditions(arm)[COMPATIBLE]
    assert condition["reason"] == "SchedulingConfigConflict"
    assert 'SchedulingConfig "default"' in condition["message"]
    assert "kubernetes.io/arch" in condition["message"]
    any_pool = await env.cached(
        compatibility.nodepools, "any", lambda p: status_of(p, COMPATIBLE) == "True"
    )
    assert "default" in conditions(any_pool)[COMPATIBLE]["message"]
    # A NodePool no config applies to gets no condition at all.
    untouched = await env.get(NODEPOOLS, "untouched")
    assert COMPATIBLE not in conditions(untouched)

    # Loosening the config makes the pool compatible; deleting it removes the condition.
    await env.client.patch(
        SCHEDULINGCONFIGS,
        "default",
        {"spec": {"requirements": [{"key": "kubernetes.io/os", "operator": "Exists"}]}},
    )
    await env.cached(compatibility.nodepools, "arm", lambda p: status_of(p, COMPATIBLE) == "True")
    await env.client.delete(SCHEDULINGCONFIGS, "default")
    await env.cached(compatibility.nodepools, "arm", lambda p: status_of(p, COMPATIBLE) is None)
