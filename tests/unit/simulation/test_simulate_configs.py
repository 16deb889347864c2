"""`karpy simulate` reads SchedulingConfig documents (karpy's extension) as the cluster applies
them: the guard rail, the reason naming the config, the default config's policies over the
flags, and invalid configs refused naming the document and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.cli import main

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
"""

CONFIG = """
apiVersion: karpenter.sh/v1
kind: SchedulingConfig
metadata: {name: default}
spec:
  nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
  requirements:
    - {key: kubernetes.io/arch, operator: In, values: [amd64]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
status:
  nodePools: [somewhere-else]
"""


def _deployment(name: str, arch: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: shop}}
spec:
  replicas: 2
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      nodeSelector: {{kubernetes.io/arch: {arch}}}
      containers:
        - name: c
          image: nginx
          resources: {{requests: {{cpu: 500m, memory: 1Gi}}}}
"""


def _simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: str, args: tuple[str, ...] = ()
) -> tuple[int, str, str]:
    path = tmp_path / "scenario.yaml"
    path.write_text("\n---\n".join(docs))
    code = main(["simulate", "-f", str(path), "-o", "json", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_config_constrains_the_plan_and_names_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = (NODEPOOL, CONFIG, _deployment("amd", "amd64"), _deployment("arm", "arm64"))
    code, out, err = _simulate(tmp_path, capsys, *docs)
    assert code == 0, err
    assert "SchedulingConfig" not in err  # read, not skipped
    plan = json.loads(out)
    placed = sorted(p for c in plan["nodeClaims"] for p in c["pods"])
    assert placed == ["shop/amd-0", "shop/amd-1"]
    assert {c["offering"]["capacityType"] for c in plan["nodeClaims"]} == {"on-demand"}
    reasons = {u["pod"]: u["reason"] for u in plan["unschedulable"]}
    assert sorted(reasons) == ["shop/arm-0", "shop/arm-1"]
    assert 'SchedulingConfig "default" rules out nodepool "default"' in reasons["shop/arm-0"]

    # without the config both architectures launch
    code, out, _ = _simulate(tmp_path, capsys, NODEPOOL, _deployment("arm", "arm64"))
    assert code == 0 and not json.loads(out)["unschedulable"]


def test_default_config_policy_wins_over_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A minValues no catalogue meets: `--min-values-policy Strict` leaves the pods pending,
    the `default` config's BestEffort relaxes it and they are planned."""
    config = CONFIG.replace("  requirements:", "  minValuesPolicy: BestEffort\n  requirements:")
    pool = NODEPOOL.replace(
        "values: [spot, on-demand]}",
        "values: [spot, on-demand]}\n"
        "        - {key: karpenter.kwok.sh/instance-family, operator: Exists, minValues: 50}",
    )
    docs = (pool, config, _deployment("amd", "amd64"))
    code, out, err = _simulate(tmp_path, capsys, *docs, args=("--min-values-policy", "Strict"))
    assert code == 0, err
    plan = json.loads(out)
    assert not plan["unschedulable"]
    assert plan["nodeClaims"]
    code, out, _ = _simulate(
        tmp_path,
        capsys,
        pool,
        CONFIG,
        _deployment("amd", "amd64"),
        args=("--min-values-policy", "Strict"),
    )
    assert code == 0
    assert json.loads(out)["unschedulable"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("operator: In, values: [amd64]", "operator: Near, values: [amd64]"), "requirements[0]"),
        (("kubernetes.io/arch", "karpenter.sh/custom"), "spec.requirements[0].key"),
        (("  requirements:", "  batchIdleDuration: soon\n  requirements:"), "batchIdleDuration"),
    ],
)
def test_invalid_config_exits_2_naming_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], field: str
) -> None:
    bad = CONFIG.replace(*change)
    code, out, err = _simulate(tmp_path, capsys, NODEPOOL, bad, _deployment("amd", "amd64"))
    assert code == 2 and out == ""
    assert "scenario.yaml: document 2 (SchedulingConfig 'default')" in err
    assert field in err


def test_duplicate_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _simulate(tmp_path, capsys, NODEPOOL, CONFIG, CONFIG)
    assert code == 2 and "duplicate SchedulingConfig" in err


def test_disruption_replacements_keep_to_the_configs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--disruption`: the cheaper replacement of an oversized node comes from the families a
    SchedulingConfig leaves (the same scenario without it picks one it rules out)."""
    from tests.unit.simulation.test_simulate_disruption import node, nodepool, pod, write

    family = "karpenter.kwok.sh/instance-family"
    objects = [nodepool(), node("big", "c-32x-amd64-linux"), pod("p", "big", "1")]

    def replacement(*docs: dict[str, Any]) -> str:
        code = main(["simulate", "--disruption", "-o", "json", "-f", write(tmp_path, *docs)])
        out, err = capsys.readouterr()
        assert code == 0, err
        (command,) = json.loads(out)["commands"]
        assert command["decision"] == "replace"
        return str(command["replacement"]["instanceType"])

    free = replacement(*objects)
    chosen = free.split("-")[0]
    config = yaml.safe_load(CONFIG)
    del config["status"]
    config["spec"]["requirements"] = [
        {"key": family, "operator": "NotIn", "values": [chosen]},
    ]
    constrained = replacement(*objects, config)
    assert constrained.split("-")[0] != chosen
