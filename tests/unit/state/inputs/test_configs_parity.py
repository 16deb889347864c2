"""SchedulingConfigs give the same plan, and the same reasons, to the provisioner and to
`karpy simulate` (one set of objects given to both paths, `tests.kit.parity`). Each case also
checks the outcome it is about: a config ignored on both paths would still agree."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.kit.parity import provisioned, simulated
from tests.unit.state.inputs.test_builder_parity import (
    JSON,
    NAMESPACE,
    NODECLASS,
    NS,
    Plan,
    nodepool,
    plan_of,
    pod,
)

ARCH = "kubernetes.io/arch"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"


@dataclass(frozen=True)
class Outcome:
    plan: Plan
    errors: dict[str, str]
    """Pod key -> the reason its FailedScheduling event gives."""


# -- objects ------------------------------------------------------------------------------------


def open_pool(name: str = "default", *, nodeclass: str = "local", arch: Sequence[str] = ()) -> JSON:
    """A NodePool allowing both architectures and both capacity types (unless `arch`)."""
    pool = nodepool(name)
    tspec = pool["spec"]["template"]["spec"]
    tspec["nodeClassRef"]["name"] = nodeclass
    tspec["requirements"] = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": ARCH, "operator": "In", "values": list(arch or ("amd64", "arm64"))},
        {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]},
    ]
    return pool


def kwok_nodeclass(name: str) -> JSON:
    out = copy.deepcopy(NODECLASS)
    out["metadata"] = {"name": name, "uid": f"nodeclass-{name}", "resourceVersion": "1"}
    return out


def config(name: str = "default", *, nodeclass: str | None = "local", **spec: object) -> JSON:
    body: JSON = {
        "requirements": [
            {"key": ARCH, "operator": "In", "values": ["amd64"]},
            {"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
        ],
        **spec,
    }
    if nodeclass is not None:
        body["nodeClassRef"] = {
            "group": "karpenter.kwok.sh",
            "kind": "KWOKNodeClass",
            "name": nodeclass,
        }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "SchedulingConfig",
        "metadata": {"name": name, "uid": f"config-{name}", "resourceVersion": "1"},
        "spec": body,
    }


def arm_pod(name: str) -> JSON:
    return pod(name, nodeSelector={ARCH: "arm64"})


# -- the two paths ------------------------------------------------------------------------------


def in_simulation(objects: Sequence[JSON], tmp_path: Path) -> Outcome:
    out = simulated(objects, tmp_path)
    return Outcome(plan_of(out.result), out.scenario.explain(out.result.errors))


async def on_cluster(objects: Sequence[JSON]) -> Outcome:
    result = await provisioned(objects)
    return Outcome(plan_of(result), dict(result.errors))


# -- the cases ----------------------------------------------------------------------------------


def _amd64_on_demand_only(out: Outcome) -> None:
    assert out.plan.new_pods() == {f"{NS}/web-0"}
    assert {c[2] for c in out.plan.claims} == {"on-demand"}
    assert set(out.errors) == {f"{NS}/arm-0"}
    reason = out.errors[f"{NS}/arm-0"]
    assert 'SchedulingConfig "default" rules out nodepool "default"' in reason
    assert ARCH in reason


def _other_nodeclass_is_free(out: Outcome) -> None:
    pools = {c[0]: c for c in out.plan.claims}
    assert set(pools) == {"default", "free"}
    assert pools["free"][4] == (f"{NS}/arm-0",)
    assert pools["default"][4] == (f"{NS}/web-0",)
    assert pools["default"][2] == "on-demand"
    assert not out.errors


def _unsatisfiable_pool_unused(out: Outcome) -> None:
    assert out.plan.claims == ()
    reason = out.errors[f"{NS}/web-0"]
    assert 'nodepool "arm" is not used: SchedulingConfig "default" makes key' in reason
    assert ARCH in reason


def _default_spread(out: Outcome) -> None:
    # no pod declares a spread: the default config's zonal DoNotSchedule spread applies to all
    assert len(out.plan.zones()) == 3
    assert out.plan.new_pods() == {f"{NS}/web-{i}" for i in range(3)}


@dataclass(frozen=True)
class Case:
    id: str
    objects: list[JSON]
    check: Callable[[Outcome], None]


CASES = [
    Case(
        "config-keeps-its-nodeclass-amd64-on-demand",
        [open_pool(), NODECLASS, NAMESPACE, config(), pod("web-0"), arm_pod("arm-0")],
        _amd64_on_demand_only,
    ),
    Case(
        "config-leaves-other-nodeclasses-alone",
        [
            open_pool(),
            open_pool("free", nodeclass="other"),
            NODECLASS,
            kwok_nodeclass("other"),
            NAMESPACE,
            config(),
            pod("web-0", nodeSelector={"karpenter.sh/nodepool": "default"}),
            arm_pod("arm-0"),
        ],
        _other_nodeclass_is_free,
    ),
    Case(
        "config-makes-a-nodepool-unsatisfiable",
        [open_pool("arm", arch=["arm64"]), NODECLASS, NAMESPACE, config(), pod("web-0")],
        _unsatisfiable_pool_unused,
    ),
    Case(
        "default-config-spreads-pods-without-constraints",
        [
            open_pool(),
            NODECLASS,
            NAMESPACE,
            config(
                nodeclass=None,
                requirements=[],
                topologySpreadConstraints=[
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ],
            ),
            *(pod(f"web-{i}", cpu="100m") for i in range(3)),
        ],
        _default_spread,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_provisioner_and_simulate_apply_configs_alike(case: Case, tmp_path: Path) -> None:
    live = await on_cluster(case.objects)
    assert live == in_simulation(case.objects, tmp_path)
    case.check(live)


async def test_without_configs_nothing_changes(tmp_path: Path) -> None:
    """The same objects less the config: both architectures, the pod on arm64 is placed."""
    objects = [open_pool(), NODECLASS, NAMESPACE, pod("web-0"), arm_pod("arm-0")]
    live = await on_cluster(objects)
    assert live == in_simulation(objects, tmp_path)
    assert live.plan.new_pods() == {f"{NS}/web-0", f"{NS}/arm-0"}
    assert not live.errors
