"""Node repair runs only with the `NodeRepair` gate on and a provider with repair policies."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from karpy.cloudprovider.types import RepairPolicy
from karpy.controllers.node import health
from karpy.controllers.node.health.controller import allowed_unhealthy, matching_policy
from karpy.settings import FeatureGates

POLICY = RepairPolicy(
    condition_type="Ready", condition_status="False", toleration=timedelta(minutes=10)
)


def _ctx(gates: str, policies: list[RepairPolicy]) -> tuple[Any, list[Any]]:
    added: list[Any] = []
    ctx = SimpleNamespace(
        settings=SimpleNamespace(feature_gates=FeatureGates.model_validate(gates)),
        cloud_provider=SimpleNamespace(repair_policies=lambda: policies),
        client=None,
        cluster=None,
        events=None,
        clock=None,
        informer=lambda resource: None,
        add=added.append,
    )
    return ctx, added


def test_gate_off_registers_nothing() -> None:
    ctx, added = _ctx("NodeRepair=false", [POLICY])
    health.register(ctx)
    assert added == []


def test_gate_on_without_policies_registers_nothing() -> None:
    ctx, added = _ctx("NodeRepair=true", [])
    health.register(ctx)
    assert added == []


def test_gate_on_registers_the_controller() -> None:
    ctx, added = _ctx("NodeRepair=true", [POLICY])
    health.register(ctx)
    assert [type(a).__name__ for a in added] == ["NodeHealthController"]


def test_matching_policy_and_threshold() -> None:
    node = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]
        }
    }
    found = matching_policy(node, [POLICY])
    assert found is not None and found[0] is POLICY
    healthy = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]
        }
    }
    assert matching_policy(healthy, [POLICY]) is None
    assert [allowed_unhealthy(n) for n in (0, 1, 5, 6, 10, 11)] == [0, 1, 1, 2, 2, 3]
