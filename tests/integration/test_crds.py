"""Our CRDs in a real kube-apiserver: they install, the examples apply with Karpenter's defaults,
`kubectl get` shows Karpenter's columns, and the shared table of invalid manifests is rejected
with exactly the errors karpy's Python validation reports.

The CRDs stay installed afterwards (applying them is idempotent and other suites need them);
every custom object created here is deleted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubetest import Kubectl, delete_cluster_objects

from karpy.apis import ValidationError
from karpy.apis.aws.v1 import EC2NODECLASS
from karpy.apis.kwok.v1alpha1 import KWOKNODECLASS
from karpy.apis.registry import resource_for, validate_object
from karpy.apis.v1 import NODECLAIM, NODEPOOL, SCHEDULINGCONFIG, NodePool
from karpy.apis.v1alpha1 import NODEOVERLAY
from tests import kit
from tests.unit.apis.apis_invalid_cases import (
    CASES,
    Case,
    ec2nodeclass,
    kwoknodeclass,
    matches,
    nodeclaim,
    nodeoverlay,
    nodepool,
    schedulingconfig,
)

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "manifests" / "crds"
EXAMPLES = ROOT / "manifests" / "examples"
CRD_NAMES = (  # in deletion order: claims before pools
    "nodeclaims.karpenter.sh",
    "nodepools.karpenter.sh",
    "ec2nodeclasses.karpenter.k8s.aws",
    "aksnodeclasses.karpenter.azure.com",
    "kwoknodeclasses.karpenter.kwok.sh",
    "schedulingconfigs.karpenter.sh",
    "nodeoverlays.karpenter.sh",
    "capacitybuffers.autoscaling.x-k8s.io",
)


@pytest.fixture(scope="module")
def crds(kubectl: Kubectl) -> Iterator[None]:
    """Install the generated CRDs and wait until they are served; sweep our kinds after."""
    kubectl("apply", "-f", str(CRDS))
    kubectl(
        "wait",
        "--for=condition=Established",
        *(f"crd/{name}" for name in CRD_NAMES),
        "--timeout=60s",
        timeout=90,
    )
    yield
    delete_cluster_objects(kubectl, CRD_NAMES)


def _resource(obj: dict[str, Any]) -> str:
    resource = resource_for(obj["apiVersion"], obj["kind"])
    assert resource is not None
    return resource.crd_name


def _get(kubectl: Kubectl, resource: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = kubectl.json("get", resource, name)
    return obj


def _delete(kubectl: Kubectl, obj: dict[str, Any]) -> None:
    kubectl("delete", _resource(obj), obj["metadata"]["name"], "--ignore-not-found", "--wait=false")


def _strip_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as submitted plus defaults: without what the server adds to metadata."""
    out = {k: v for k, v in obj.items() if k != "metadata"}
    out["metadata"] = {"name": obj["metadata"]["name"]}
    return out


def test_crds_are_established_and_served(crds: None, kubectl: Kubectl) -> None:
    for name in CRD_NAMES:
        crd = _get(kubectl, "crd", name)
        established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert established["Established"] == "True"
        assert established["NamesAccepted"] == "True"
    out = kubectl("api-resources", "--api-group=karpenter.sh", "-o", "name").stdout.split()
    assert sorted(out) == [
        "nodeclaims.karpenter.sh",
        "nodeoverlays.karpenter.sh",
        "nodepools.karpenter.sh",
        "schedulingconfigs.karpenter.sh",
    ]


def _example_files() -> list[str]:
    """Every manifest under manifests/examples (the IAM policy there is not one)."""
    return [arg for path in sorted(EXAMPLES.rglob("*.yaml")) for arg in ("-f", str(path))]


def test_examples_apply_with_karpenters_defaults(crds: None, kubectl: Kubectl) -> None:
    try:
        kubectl("apply", *_example_files())
        aws_pool = _get(kubectl, "nodepools.karpenter.sh", "default")
        kwok_pool = _get(kubectl, "nodepools.karpenter.sh", "local")
        for pool in (aws_pool, kwok_pool):
            spec = pool["spec"]
            assert spec["template"]["spec"]["expireAfter"] == "720h"
            assert spec["disruption"] == {
                "budgets": [{"nodes": "10%"}],
                "consolidateAfter": "30s",
                "consolidationPolicy": "WhenEmpty",
            }
        assert aws_pool["spec"]["limits"] == {"cpu": 1000, "memory": "4000Gi"}
        nodeclass = _get(kubectl, "ec2nodeclasses.karpenter.k8s.aws", "default")
        assert nodeclass["spec"]["metadataOptions"] == {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        }
        kwok = _get(kubectl, "kwoknodeclasses.karpenter.kwok.sh", "local")
        ready = [c for c in kwok["status"]["conditions"] if c["type"] == "Ready"]
        assert [c["status"] for c in ready] == ["True"]
        config = _get(kubectl, "schedulingconfigs.karpenter.sh", "default")
        assert [r["key"] for r in config["spec"]["requirements"]] == [
            "kubernetes.io/arch",
            "karpenter.sh/capacity-type",
        ]
        overlay = _get(kubectl, "nodeoverlays.karpenter.sh", "m-savings-plan")
        assert (overlay["spec"]["priceAdjustment"], overlay["spec"]["weight"]) == ("-40%", 10)
        fuse = _get(kubectl, "nodeoverlays.karpenter.sh", "fuse-device")
        assert fuse["spec"]["capacity"] == {"example.com/fuse": "1"}
        static_pool = _get(kubectl, "nodepools.karpenter.sh", "static")
        assert static_pool["spec"]["replicas"] == 3
        assert static_pool["spec"]["limits"] == {"nodes": 4}
        buffer = _get(kubectl, "capacitybuffers.autoscaling.x-k8s.io", "web-headroom")
        assert buffer["spec"]["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
        assert (buffer["spec"]["replicas"], buffer["spec"]["limits"]) == (3, {"cpu": "4"})
        burst = _get(kubectl, "capacitybuffers.autoscaling.x-k8s.io", "inflate-burst")
        assert burst["spec"]["scalableRef"]["kind"] == "Deployment"
        deployment = _get(kubectl, "deployment", "inflate")
        assert deployment["metadata"]["namespace"] == "default"

        # What the apiserver stored is what karpy's models and admission produce.
        for stored in (
            aws_pool,
            kwok_pool,
            static_pool,
            nodeclass,
            kwok,
            config,
            overlay,
            fuse,
            buffer,
            burst,
        ):
            resource = resource_for(stored["apiVersion"], stored["kind"])
            assert resource is not None
            assert resource.validate(stored).to_dict() == stored
            assert resource.admit(_strip_server_fields(stored)) == _strip_server_fields(stored)
    finally:
        kubectl("delete", *_example_files(), "--ignore-not-found", "--wait=false")


@pytest.mark.parametrize(
    "minimal",
    [
        nodepool("min-np"),
        nodeclaim("min-nc"),
        ec2nodeclass("min-ec2"),
        kwoknodeclass("min-kwok"),
        schedulingconfig("min-sc"),
        nodeoverlay("min-no"),
        kit.capacitybuffer("min-cb", podTemplateRef={"name": "t"}, replicas=1),
    ],
    ids=lambda o: o["kind"],
)
def test_minimal_objects_get_the_same_defaults_as_in_python(
    crds: None, kubectl: Kubectl, minimal: dict[str, Any]
) -> None:
    if minimal["kind"] == "NodePool":
        del minimal["spec"]["disruption"]
    if minimal["kind"] == "EC2NodeClass":
        minimal["spec"]["metadataOptions"] = {"httpPutResponseHopLimit": 2}
    if minimal["kind"] == "KWOKNodeClass":
        del minimal["spec"]
    if minimal["kind"] == "SchedulingConfig":  # the one defaulted field
        minimal["spec"]["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}
        ]
    try:
        kubectl.apply(minimal)
        stored = _get(kubectl, _resource(minimal), minimal["metadata"]["name"])
        resource = resource_for(minimal["apiVersion"], minimal["kind"])
        assert resource is not None
        expected = resource.admit(minimal)
        for part in ("spec", "status"):
            assert stored.get(part) == expected.get(part)
    finally:
        _delete(kubectl, minimal)


def _api_lines(stderr: str) -> set[str]:
    """The field errors of a `kubectl create/replace` failure, one per line."""
    lines = set()
    for raw in stderr.splitlines():
        line = raw.strip()
        if line.startswith("* "):
            lines.add(line[2:])
        elif " is invalid: " in line and line.split(" is invalid: ", 1)[1]:
            lines.add(line.split(" is invalid: ", 1)[1])
    return lines


def _submit(kubectl: Kubectl, case: Case) -> str:
    """Create the case's object (or replace its stored base); returns kubectl's stderr."""
    old, new = case.objects()
    if old is not None:
        kubectl("create", "-f", "-", input=json.dumps(old))
        proc = kubectl("replace", "-f", "-", input=json.dumps(new), check=False)
    else:
        proc = kubectl("create", "-f", "-", input=json.dumps(new), check=False)
    return proc.stderr if proc.returncode != 0 else ""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_invalid_manifest_is_rejected_like_in_python(
    crds: None, kubectl: Kubectl, case: Case
) -> None:
    old, new = case.objects()
    try:
        stderr = _submit(kubectl, case)
    finally:
        _delete(kubectl, new)
    assert stderr, f"the apiserver accepted {case.id}"
    with pytest.raises(ValidationError) as info:
        validate_object(new, old=old)
    python_lines = {str(e) for e in info.value.errors}
    if case.path is None:
        assert case.message in stderr
        assert matches(case, list(python_lines))
        return
    api_lines = _api_lines(stderr)
    assert matches(case, sorted(api_lines)), stderr
    assert api_lines == python_lines


def _legacy_pool(name: str, api_version: str) -> dict[str, Any]:
    pool = nodepool(name)
    pool["spec"]["template"]["spec"]["nodeClassRef"] = {
        "apiVersion": api_version,
        "kind": "EC2NodeClass",
        "name": "default",
    }
    return pool


def test_legacy_api_version_in_node_class_ref_is_accepted(crds: None, kubectl: Kubectl) -> None:
    legacy = _legacy_pool("legacy", "karpenter.k8s.aws/v1")
    try:
        kubectl.apply(legacy)
        stored = _get(kubectl, "nodepools.karpenter.sh", "legacy")
        ref = stored["spec"]["template"]["spec"]["nodeClassRef"]
        assert ref == {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "name": "default",
        }
        assert NodePool.model_validate(stored).spec.template.spec.node_class_ref.group_name() == (
            "karpenter.k8s.aws"
        )
        # Rewriting it in the current form names the same group, so it is not a change.
        current = nodepool("legacy")
        current["metadata"] = stored["metadata"]
        kubectl("replace", "-f", "-", input=json.dumps(current))
        # Another group is.
        other = _legacy_pool("legacy", "karpenter.kwok.sh/v1alpha1")
        proc = kubectl("replace", "-f", "-", input=json.dumps(other), check=False)
        assert proc.returncode != 0
        assert "nodeClassRef.group is immutable" in proc.stderr
    finally:
        _delete(kubectl, legacy)


def _columns(kubectl: Kubectl, *args: str) -> list[list[str]]:
    out = kubectl("get", *args).stdout
    return [line.split() for line in out.strip().splitlines()]


def test_kubectl_get_shows_karpenters_columns(crds: None, kubectl: Kubectl) -> None:
    pool = nodepool("columns")
    pool["spec"]["weight"] = 7
    claim = nodeclaim("columns-abcde")
    claim["metadata"]["labels"] = {
        "karpenter.sh/nodepool": "columns",
        "node.kubernetes.io/instance-type": "m5.large",
        "karpenter.sh/capacity-type": "spot",
        "topology.kubernetes.io/zone": "us-east-1a",
    }
    nodeclass = ec2nodeclass("columns")
    config = schedulingconfig("columns")
    try:
        for obj in (pool, claim, nodeclass, config):
            kubectl.apply(obj)
        now = "2026-01-01T00:00:00Z"
        claim_status = {
            "status": {
                "nodeName": "node-1",
                "providerID": "aws:///us-east-1a/i-0123",
                "imageID": "ami-0123",
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": now},
                    {"type": "Drifted", "status": "False", "lastTransitionTime": now},
                ],
            }
        }
        pool_status = {
            "status": {
                "nodes": 1,
                "resources": {"cpu": "2", "memory": "8Gi", "nodes": "1"},
                "cost": "0.192",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Ready",
                        "message": "",
                        "lastTransitionTime": now,
                    }
                ],
            }
        }
        for resource, name, status in (
            ("nodeclaims.karpenter.sh", "columns-abcde", claim_status),
            ("nodepools.karpenter.sh", "columns", pool_status),
        ):
            kubectl(
                "patch", resource, name, "--subresource=status", "--type=merge",
                "--patch", json.dumps(status),
            )  # fmt: skip

        rows = _columns(kubectl, "nodepools")
        assert rows[0] == ["NAME", "NODECLASS", "NODES", "READY", "AGE"]
        assert rows[1][:4] == ["columns", "default", "1", "True"]
        rows = _columns(kubectl, "nodepools", "-o", "wide")
        assert rows[0] == [
            *("NAME", "NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "CPU", "MEMORY", "COST")
        ]
        assert rows[1][-4:] == ["7", "2", "8Gi", "0.192"]

        rows = _columns(kubectl, "nodeclaims")
        assert rows[0] == ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"]
        assert rows[1][:6] == ["columns-abcde", "m5.large", "spot", "us-east-1a", "node-1", "True"]
        rows = _columns(kubectl, "nodeclaims", "-o", "wide")
        assert rows[0][7:] == ["IMAGEID", "ID", "NODEPOOL", "NODECLASS", "DRIFTED"]
        assert rows[1][7:] == ["ami-0123", "aws:///us-east-1a/i-0123", "columns", "x", "False"]

        rows = _columns(kubectl, "ec2nodeclasses")
        assert rows[0] == ["NAME", "READY", "AGE"]
        rows = _columns(kubectl, "ec2nc", "-o", "wide")
        assert rows[0] == ["NAME", "READY", "AGE", "ROLE"]
        assert rows[1][0] == "columns" and rows[1][-1] == "KarpenterNodeRole"

        combined = kubectl("get", "nodepools,nodeclaims,ec2nodeclasses").stdout
        for name in ("nodepool.karpenter.sh/columns", "nodeclaim.karpenter.sh/columns-abcde",
                     "ec2nodeclass.karpenter.k8s.aws/columns"):  # fmt: skip
            assert name in combined
        config_status = {
            "status": {
                "nodePools": ["columns"],
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Ready",
                        "message": "",
                        "lastTransitionTime": now,
                    }
                ],
            }
        }
        kubectl(
            "patch", "schedulingconfigs.karpenter.sh", "columns", "--subresource=status",
            "--type=merge", "--patch", json.dumps(config_status),
        )  # fmt: skip
        rows = _columns(kubectl, "schedulingconfigs")
        assert rows[0] == ["NAME", "NODECLASS", "NODEPOOLS", "READY", "AGE"]
        assert rows[1][:4] == ["columns", "x", '["columns"]', "True"]

        category = kubectl("get", "karpenter", "-o", "name").stdout.split()
        assert "nodepool.karpenter.sh/columns" in category
        assert "ec2nodeclass.karpenter.k8s.aws/columns" in category
        assert "schedulingconfig.karpenter.sh/columns" in category
    finally:
        for obj in (claim, pool, nodeclass, config):
            _delete(kubectl, obj)


def test_kubectl_get_shows_nodeoverlay_columns(crds: None, kubectl: Kubectl) -> None:
    overlay = nodeoverlay("columns")
    try:
        kubectl.apply(overlay)
        rows = _columns(kubectl, "overlays")
        assert rows[0] == ["NAME", "READY", "AGE"]
        assert rows[1][0] == "columns"
        rows = _columns(kubectl, "nodeoverlays", "-o", "wide")
        assert rows[0] == ["NAME", "READY", "AGE", "WEIGHT"]
        assert rows[1][-1] == "10"
        assert (
            "nodeoverlay.karpenter.sh/columns" in kubectl("get", "karpenter", "-o", "name").stdout
        )
    finally:
        _delete(kubectl, overlay)


def test_status_is_a_subresource(crds: None, kubectl: Kubectl) -> None:
    claim = nodeclaim("status-sub")
    claim["status"] = {"providerID": "kwok://ignored"}
    try:
        kubectl.apply(claim)
        stored = _get(kubectl, "nodeclaims.karpenter.sh", "status-sub")
        assert "providerID" not in stored.get("status", {})
    finally:
        _delete(kubectl, claim)


def test_every_resource_is_covered() -> None:
    kinds = {NODEPOOL.kind, NODECLAIM.kind, EC2NODECLASS.kind, KWOKNODECLASS.kind, "AKSNodeClass"}
    extensions = {SCHEDULINGCONFIG.kind, NODEOVERLAY.kind, "CapacityBuffer"}
    assert kinds | extensions == {c.kind for c in CASES}
