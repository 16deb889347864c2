"""`karpy simulate` reads NodeOverlay documents as the cluster applies them: a discount moves
the plan to the discounted family at the adjusted price, a capacity overlay lets pods that
request the resource be planned, a conflicting overlay is ignored with a warning, and an invalid
overlay is refused naming the document and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""


def _overlay(name: str, family: str, body: str, weight: int | None = None) -> str:
    spec_weight = f"\n  weight: {weight}" if weight is not None else ""
    return f"""
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {{name: {name}}}
spec:{spec_weight}
  requirements:
    - {{key: karpenter.kwok.sh/instance-family, operator: In, values: [{family}]}}
  {body}
status:
  conditions: []
"""


def _deployment(name: str, requests: str = "{cpu: '1', memory: 1Gi}") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: shop}}
spec:
  replicas: 3
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: c
          image: nginx
          resources: {{requests: {requests}}}
"""


def _simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: str
) -> tuple[int, dict[str, Any], str]:
    path = tmp_path / "scenario.yaml"
    path.write_text("\n---\n".join(docs))
    code = main(["simulate", "-f", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, err


def _families(plan: dict[str, Any]) -> set[str]:
    return {c["offering"]["instanceType"].split("-", 1)[0] for c in plan["nodeClaims"]}


def test_a_discount_moves_the_plan_to_the_family(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, plain, err = _simulate(tmp_path, capsys, NODEPOOL, _deployment("web"))
    assert code == 0, err
    assert _families(plain) == {"c"}
    discount = _overlay("m-discount", "m", 'priceAdjustment: "-50%"')
    code, plan, err = _simulate(tmp_path, capsys, NODEPOOL, discount, _deployment("web"))
    assert code == 0, err
    assert "NodeOverlay" not in err  # read, not skipped
    assert _families(plan) == {"m"}
    assert not plan["unschedulable"]
    assert plan["cost"]["total"] < plain["cost"]["total"]


def test_a_capacity_overlay_lets_pods_requesting_the_resource_be_planned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fuse = _deployment("fuse", "{cpu: '1', example.com/fuse: '1'}")
    code, plan, err = _simulate(tmp_path, capsys, NODEPOOL, fuse)
    assert code == 0, err
    assert len(plan["unschedulable"]) == 3
    overlay = _overlay("fuse", "s", 'capacity: {example.com/fuse: "1"}')
    code, plan, err = _simulate(tmp_path, capsys, NODEPOOL, overlay, fuse)
    assert code == 0, err
    assert not plan["unschedulable"]
    assert len(plan["nodeClaims"]) == 3 and _families(plan) == {"s"}


def test_a_conflicting_overlay_is_ignored_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cheap = _overlay("zz-cheap", "m", 'priceAdjustment: "-50%"', weight=5)
    dear = _overlay("aa-dear", "m", 'priceAdjustment: "+50%"', weight=5)
    code, plan, err = _simulate(tmp_path, capsys, NODEPOOL, dear, cheap, _deployment("web"))
    assert code == 0, err
    assert "NodeOverlay aa-dear is ignored: conflict with another overlay" in err
    assert _families(plan) == {"m"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('priceAdjustment: "50%"', "spec.priceAdjustment"),
        ('capacity: {cpu: "2"}', "spec.capacity"),
        ('price: "1"\n  priceAdjustment: "+1"', "cannot set both"),
    ],
)
def test_an_invalid_overlay_exits_2_naming_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, field: str
) -> None:
    code, _, err = _simulate(tmp_path, capsys, NODEPOOL, _overlay("bad", "m", body))
    assert code == 2
    assert "scenario.yaml: document 2 (NodeOverlay 'bad')" in err
    assert field in err
