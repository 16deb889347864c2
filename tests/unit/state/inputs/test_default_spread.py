"""Cluster-default topology spread constraints from the setting (kube-scheduler's
`defaultConstraints`): given to pending pods that declare none, in the provisioner's input and
in `karpy simulate`'s alike; a `default` SchedulingConfig's constraints win over the setting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.cli import main
from karpy.scheduling.engine import schedule
from karpy.simulation.scenario import load_scenario
from karpy.state.inputs import ClusterObjects, build_input
from tests.kit import pod, schedulingconfig, served
from tests.kit.parity import kwok_types
from tests.unit.state.inputs.test_builder_parity import NAMESPACE, NS, nodepool

ZONE = "topology.kubernetes.io/zone"
ZONAL = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]


def _web(i: int, **spec: Any) -> dict[str, Any]:
    return served(
        pod(f"web-{i}", NS, labels={"app": "web"}, requests={"cpu": "1"}, spec=spec),
        uid=f"uid-web-{i}",
    )


def test_pods_without_constraints_get_the_defaults_others_keep_theirs() -> None:
    own = [
        {
            "maxSkew": 3,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
        }
    ]
    pods = [_web(0), _web(1, topologySpreadConstraints=own)]
    built = build_input(ClusterObjects(pending=pods), default_spread=ZONAL)
    by_key = {p.key: p for p in built.input.pods}
    (zonal,) = by_key[f"{NS}/web-0"].spread
    assert (zonal.topology_key, zonal.max_skew, zonal.when_unsatisfiable) == (
        ZONE,
        1,
        "DoNotSchedule",
    )
    (kept,) = by_key[f"{NS}/web-1"].spread
    assert (kept.topology_key, kept.max_skew) == ("kubernetes.io/hostname", 3)
    assert build_input(ClusterObjects(pending=[_web(0)])).input.pods[0].spread == ()


def test_a_default_schedulingconfig_wins_over_the_setting() -> None:
    config = schedulingconfig(
        nodeclass=None,
        topologySpreadConstraints=[{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname"}],
    )
    built = build_input(ClusterObjects(pending=[_web(0)], configs=[config]), default_spread=ZONAL)
    (spread,) = built.input.pods[0].spread
    assert (spread.topology_key, spread.max_skew) == ("kubernetes.io/hostname", 2)


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    docs = [NAMESPACE, nodepool(), *(_web(i) for i in range(3))]
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_simulate_spreads_over_zones_with_the_defaults(tmp_path: Path) -> None:
    path = str(_scenario(tmp_path))
    plain = schedule(load_scenario([path], instance_types=kwok_types()).input)
    spread = schedule(
        load_scenario([path], instance_types=kwok_types(), default_spread=ZONAL).input
    )
    assert len(plain.node_claims) == 1  # three 1-CPU pods share one node without defaults
    zones = {c.offering.zone for c in spread.node_claims if c.offering is not None}
    assert len(spread.node_claims) == 3 and len(zones) == 3


def test_the_simulate_flag_checks_its_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(_scenario(tmp_path))
    assert (
        main(
            [
                "simulate",
                "-f",
                path,
                "-o",
                "json",
                "--default-topology-spread-constraints",
                json.dumps(ZONAL),
            ]
        )
        == 0
    )
    out = yaml.safe_load(capsys.readouterr().out)
    assert len(out["nodeClaims"]) == 3
    with pytest.raises(SystemExit):
        main(["simulate", "-f", path, "--default-topology-spread-constraints", '[{"maxSkew": 0}]'])
    assert "[0].maxSkew" in capsys.readouterr().err
