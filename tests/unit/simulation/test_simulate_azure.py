"""`karpy simulate` with an AKSNodeClass plans on Azure SKUs with the shipped prices
(`--instance-types azure[:REGION]`), never on the kwok catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from karpy.cli import main

EXAMPLE = Path(__file__).resolve().parents[3] / "docs/getting-started/aks-scenario.yaml"
KWOK_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: local}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: local}
      requirements: []
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_docs_example_plans_on_azure_skus_with_snapshot_prices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "-f", str(EXAMPLE), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["unschedulable"] == []
    (claim,) = doc["nodeClaims"]
    offering = claim["offering"]
    # 18 vCPUs and 96Gi of requests: the cheapest D-family SKU that holds them in eastus
    # (D32s_v3 and D32s_v5 both cost $1.536/hour there).
    assert offering["instanceType"] in {"Standard_D32s_v3", "Standard_D32s_v5"}
    assert offering["price"] == pytest.approx(1.536)
    assert offering["zone"] in {"eastus-1", "eastus-2", "eastus-3"}
    assert all(name.startswith("Standard_D") for name in claim["instanceTypes"])


def test_a_region_is_selectable_and_unknown_ones_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "-f", str(EXAMPLE), "--instance-types", "azure:westus", "-o", "json"
    )
    assert code == 0, err
    (claim,) = json.loads(out)["nodeClaims"]
    assert claim["offering"]["price"] == pytest.approx(1.792)  # westus: Standard_D32s_v5
    assert claim["offering"]["zone"] == ""  # West US has no availability zones
    code, out, err = run(capsys, "-f", str(EXAMPLE), "--instance-types", "azure:mars")
    assert code == 2 and out == ""
    assert "shipped: eastus, westus, westus2" in err


@pytest.mark.parametrize("value", ["aws", "aws:us-west-2"])
def test_another_providers_catalogue_is_refused(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = run(capsys, "-f", str(EXAMPLE), "--instance-types", value)
    assert code == 2 and out == ""
    assert "AKSNodeClass" in err and "--instance-types azure[:REGION]" in err


def test_mixing_with_kwok_is_refused_and_azure_skus_are_refused_for_kwok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kwok = tmp_path / "kwok.yaml"
    kwok.write_text(KWOK_POOL)
    code, _, err = run(capsys, "-f", str(EXAMPLE), "-f", str(kwok))
    assert code == 2 and "mixes AKSNodeClass" in err
    code, _, err = run(capsys, "-f", str(kwok), "--instance-types", "azure")
    assert code == 2 and "KWOKNodeClass" in err


def test_an_invalid_aksnodeclass_exits_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace("imageFamily: Ubuntu2204", "imageFamily: Debian"))
    code, out, err = run(capsys, "-f", str(bad))
    assert code == 2 and out == ""
    assert "imageFamily" in err


SIZED = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: sized}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.azure.com, kind: AKSNodeClass, name: sized}}
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [Standard_D16s_v3]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
---
apiVersion: karpenter.azure.com/v1beta1
kind: AKSNodeClass
metadata: {{name: sized}}
spec: {spec}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: app}}}}
  template:
    metadata: {{labels: {{app: app}}}}
    spec:
      containers:
        - name: app
          image: app
          resources: {{requests: {requests}}}
"""


def plan_sized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *, spec: str, replicas: int, requests: str
) -> list[dict[str, object]]:
    path = tmp_path / "sized.yaml"
    path.write_text(SIZED.format(spec=spec, replicas=replicas, requests=requests))
    code, out, err = run(capsys, "-f", str(path), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["unschedulable"] == []
    claims: list[dict[str, object]] = doc["nodeClaims"]
    return claims


@pytest.mark.parametrize(
    ("spec", "nodes"),
    [
        ("{}", 1),  # the snapshot's Azure CNI overlay default: 250 pods a node
        ("{maxPods: 10}", 3),  # 24 pods, 10 a node
    ],
)
def test_the_aksnodeclass_maxpods_caps_the_pods_of_its_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, nodes: int
) -> None:
    claims = plan_sized(tmp_path, capsys, spec=spec, replicas=24, requests="{cpu: 10m}")
    assert len(claims) == nodes


@pytest.mark.parametrize(
    ("spec", "nodes"),
    [
        ("{}", 6),  # 128 GB OS disks (the default): one 100Gi pod a node
        ("{osDiskSizeGB: 512}", 2),  # 4 a node
    ],
)
def test_the_aksnodeclass_os_disk_is_the_ephemeral_storage_of_its_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, nodes: int
) -> None:
    claims = plan_sized(
        tmp_path, capsys, spec=spec, replicas=6, requests="{cpu: 10m, ephemeral-storage: 100Gi}"
    )
    assert len(claims) == nodes
