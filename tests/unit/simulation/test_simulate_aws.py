"""`karpy simulate --instance-types aws[:REGION]` plans with the shipped EC2 snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from karpy.cli import main

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""

GPU_NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-gpu-manufacturer, operator: In, values: [nvidia]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
"""

WORKLOADS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: "1", memory: 2Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers:
    - name: t
      image: cuda
      resources: {limits: {nvidia.com/gpu: "1"}}
"""


def plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("\n---\n".join((NODEPOOL, GPU_NODEPOOL, WORKLOADS)))
    code = main(["simulate", "-f", str(scenario), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_uses_real_instance_types_and_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = plan(tmp_path, capsys, "--instance-types", "aws", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["unschedulable"] == []
    by_pool = {c["nodePool"]: c for c in doc["nodeClaims"]}
    web = [c for c in doc["nodeClaims"] if c["nodePool"] == "default"]
    assert sum(len(c["pods"]) for c in web) == 6
    for claim in web:
        offering = claim["offering"]
        family, _, _ = offering["instanceType"].partition(".")
        assert family[0] in "cmr" and offering["zone"].startswith("us-east-1")
        assert offering["capacityType"] == "on-demand"
    gpu = by_pool["gpu"]["offering"]
    # The cheapest on-demand amd64 NVIDIA type in us-east-1 (g5g.xlarge is arm64).
    assert gpu["instanceType"] == "g4dn.xlarge"
    assert gpu["price"] == pytest.approx(0.526)


def test_region_is_selectable_and_unknown_regions_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = plan(tmp_path, capsys, "--instance-types", "aws:us-west-2", "-o", "json")
    assert code == 0
    zones = {c["offering"]["zone"] for c in json.loads(out)["nodeClaims"]}
    assert zones and all(z.startswith("us-west-2") for z in zones)
    code, out, err = plan(tmp_path, capsys, "--instance-types", "aws:mars-1")
    assert code == 2 and out == "" and "mars-1" in err and "us-east-1" in err
