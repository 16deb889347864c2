"""The generated CRDs: structural schemas, Karpenter's names and columns, deterministic files."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.apis import crds
from karpy.apis.cel import compile_rule
from karpy.apis.registry import RESOURCES, resource_for
from karpy.apis.resource import CustomResource

CHECKED_IN = Path(__file__).resolve().parents[3] / "manifests" / "crds"

FILES = {
    "karpenter.sh_nodepools.yaml",
    "karpenter.sh_nodeclaims.yaml",
    "karpenter.k8s.aws_ec2nodeclasses.yaml",
    "karpenter.azure.com_aksnodeclasses.yaml",
    "karpenter.kwok.sh_kwoknodeclasses.yaml",
    "karpenter.sh_schedulingconfigs.yaml",  # karpy's extension
    "karpenter.sh_nodeoverlays.yaml",
    "autoscaling.x-k8s.io_capacitybuffers.yaml",  # the cluster-autoscaler API
}


def _crd(kind: str) -> dict[str, Any]:
    (resource,) = [r for r in RESOURCES if r.kind == kind]
    crd: dict[str, Any] = resource.crd()
    return crd


def _columns(kind: str, priority: int) -> list[tuple[str, str]]:
    version = _crd(kind)["spec"]["versions"][0]
    return [
        (c["name"], c["jsonPath"])
        for c in version["additionalPrinterColumns"]
        if c.get("priority", 0) == priority
    ]


def test_file_names_are_karpenters() -> None:
    assert {r.file_name for r in RESOURCES} == FILES


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.kind)
def test_checked_in_crds_are_up_to_date(resource: CustomResource[Any]) -> None:
    path = CHECKED_IN / resource.file_name
    assert path.read_text() == crds.render(resource), "run `make generate`"


def test_rendering_is_deterministic() -> None:
    assert crds.render_all() == crds.render_all()
    docs = list(yaml.safe_load_all(crds.render_all()))
    assert [d["metadata"]["name"] for d in docs] == [
        "nodepools.karpenter.sh",
        "nodeclaims.karpenter.sh",
        "ec2nodeclasses.karpenter.k8s.aws",
        "aksnodeclasses.karpenter.azure.com",
        "kwoknodeclasses.karpenter.kwok.sh",
        "schedulingconfigs.karpenter.sh",
        "nodeoverlays.karpenter.sh",
        "capacitybuffers.autoscaling.x-k8s.io",
    ]


def test_command_prints_one_stream(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    crds.add_arguments(parser)
    assert crds.run(parser.parse_args([])) == 0
    out = capsys.readouterr().out
    assert out == crds.render_all()
    assert len([d for d in yaml.safe_load_all(out) if d]) == len(FILES)


def test_command_writes_karpenters_files(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    crds.add_arguments(parser)
    assert crds.run(parser.parse_args(["--output-dir", str(tmp_path / "out")])) == 0
    written = {p.name: p.read_text() for p in (tmp_path / "out").iterdir()}
    assert set(written) == FILES
    assert written == {p.name: p.read_text() for p in CHECKED_IN.iterdir() if p.name in FILES}


def test_names_scope_and_categories() -> None:
    for resource in RESOURCES:
        spec = resource.crd()["spec"]
        if resource.kind == "CapacityBuffer":  # the cluster-autoscaler API: namespaced, no category
            assert spec["scope"] == "Namespaced"
            assert spec["names"]["shortNames"] == ["cb"]
        elif resource.kind == "AKSNodeClass":  # the Azure provider's CRD adds AKS's "nap"
            assert spec["scope"] == "Cluster"
            assert spec["names"]["categories"] == ["karpenter", "nap"]
        else:
            assert spec["scope"] == "Cluster"
            assert spec["names"]["categories"] == ["karpenter"]
        (version,) = spec["versions"]
        assert version["served"] and version["storage"]
        assert "status" in version["subresources"]
    assert _crd("EC2NodeClass")["spec"]["names"]["shortNames"] == ["ec2nc", "ec2ncs"]
    assert _crd("KWOKNodeClass")["spec"]["names"]["shortNames"] == ["kwoknc", "kwokncs"]
    assert _crd("NodePool")["spec"]["versions"][0]["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.nodes",
    }
    assert resource_for("karpenter.sh/v1", "NodePool") is not None
    assert resource_for("karpenter.sh/v1beta1", "NodePool") is None


def test_nodepool_printer_columns() -> None:
    assert [n for n, _ in _columns("NodePool", 0)] == ["NodeClass", "Nodes", "Ready", "Age"]
    assert [n for n, _ in _columns("NodePool", 1)] == ["Weight", "CPU", "Memory", "Cost"]


def test_schedulingconfig_printer_columns() -> None:
    assert _columns("SchedulingConfig", 0) == [
        ("NodeClass", ".spec.nodeClassRef.name"),
        ("NodePools", ".status.nodePools"),
        ("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        ("Age", ".metadata.creationTimestamp"),
    ]


def test_nodeoverlay_names_and_printer_columns() -> None:
    names = _crd("NodeOverlay")["spec"]["names"]
    assert (names["plural"], names["shortNames"]) == ("nodeoverlays", ["overlays"])
    assert _crd("NodeOverlay")["spec"]["versions"][0]["name"] == "v1alpha1"
    assert resource_for("karpenter.sh/v1alpha1", "NodeOverlay") is not None
    assert [n for n, _ in _columns("NodeOverlay", 0)] == ["Ready", "Age"]
    assert _columns("NodeOverlay", 1) == [("Weight", ".spec.weight")]


def test_nodeclaim_printer_columns() -> None:
    assert _columns("NodeClaim", 0) == [
        ("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
        ("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
        ("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
        ("Node", ".status.nodeName"),
        ("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        ("Age", ".metadata.creationTimestamp"),
    ]
    assert [n for n, _ in _columns("NodeClaim", 1)] == [
        "ImageID",
        "ID",
        "NodePool",
        "NodeClass",
        "Drifted",
    ]


def test_ec2nodeclass_printer_columns() -> None:
    assert [n for n, _ in _columns("EC2NodeClass", 0)] == ["Ready", "Age"]
    assert _columns("EC2NodeClass", 1) == [("Role", ".spec.role")]


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, prop in schema.get("properties", {}).items():
        yield from _nodes(prop, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.kind)
def test_schemas_are_structural(resource: CustomResource[Any]) -> None:
    """Every node has a type (or is int-or-string); no refs or unions; defaults are valid."""
    for path, node in _nodes(resource.schema):
        assert "$ref" not in node and "oneOf" not in node and "allOf" not in node, path
        if node.get("x-kubernetes-int-or-string"):
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
        else:
            assert node.get("type") in {"object", "array", "string", "integer", "boolean"}, path
            assert "anyOf" not in node, path
        if node.get("type") == "object" and "properties" not in node and path != ".metadata":
            assert "additionalProperties" in node, path
        for rule in node.get("x-kubernetes-validations", []):
            assert set(rule) == {"rule", "message"}, path
            compile_rule(rule["rule"])


def test_karpenter_defaults_are_in_the_schema() -> None:
    spec = _crd("NodePool")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]["properties"]
    assert spec["disruption"]["default"] == {"consolidateAfter": "0s"}
    disruption = spec["disruption"]["properties"]
    assert disruption["consolidationPolicy"]["default"] == "WhenEmptyOrUnderutilized"
    assert disruption["budgets"]["default"] == [{"nodes": "10%"}]
    assert disruption["budgets"]["items"]["properties"]["nodes"]["default"] == "10%"
    template = spec["template"]["properties"]["spec"]["properties"]
    assert template["expireAfter"]["default"] == "720h"
    assert template["requirements"]["items"]["properties"]["operator"]["enum"] == [
        "In",
        "NotIn",
        "Exists",
        "DoesNotExist",
        "Gt",
        "Lt",
        "Gte",
        "Lte",
    ]
    ec2 = _crd("EC2NodeClass")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    metadata_options = ec2["properties"]["spec"]["properties"]["metadataOptions"]
    assert metadata_options["default"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    assert all("default" in p for p in metadata_options["properties"].values())


def test_nodeclaim_spec_is_immutable_and_only_there() -> None:
    schema = _crd("NodeClaim")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["x-kubernetes-validations"] == [
        {"message": "spec is immutable", "rule": "self == oldSelf"}
    ]
    assert "x-kubernetes-validations" not in schema["properties"]["status"]
