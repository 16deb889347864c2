"""The NodeClaim object the provisioner creates for a planned node, and the limits check."""

from __future__ import annotations

from typing import Any

from karpy.apis.v1.labels import NODEPOOL_HASH_VERSION
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.controllers.provisioning.nodeclaims import nodeclaim_for
from karpy.controllers.provisioning.provisioner import limits_exceeded
from karpy.scheduling.engine.model import NewNodeClaim
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.taints import Taint

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "web", "uid": "pool-uid"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "c",
                },
                "requirements": [],
                "expireAfter": "24h",
                "terminationGracePeriod": "1h",
            },
        }
    },
}


def _claim(**kwargs: Any) -> NewNodeClaim:
    types = kwok_instance_types()[:3]
    reqs = Requirements(
        [
            Requirement(
                "node.kubernetes.io/instance-type", complement=False, values=[t.name for t in types]
            ),
            Requirement("karpenter.sh/capacity-type", complement=False, values=["on-demand"]),
            Requirement("karpenter.sh/nodepool", complement=False, values=["web"]),
            Requirement("kubernetes.io/hostname", complement=False, values=["h"]),
        ]
    )
    defaults: dict[str, Any] = {
        "nodepool": "web",
        "requirements": reqs,
        "instance_types": types,
        "requests": {"cpu": 1500, "memory": 2 * 1024**3, "pods": 3},
        "pods": [],
        "offering": None,
        "labels": {"team": "a", "karpenter.sh/capacity-type": "on-demand"},
        "taints": (Taint(key="dedicated", effect="NoSchedule", value="web"),),
        "startup_taints": (Taint(key="init", effect="NoExecute"),),
    }
    defaults.update(kwargs)
    return NewNodeClaim(**defaults)


def test_nodeclaim_fields() -> None:
    body = nodeclaim_for(_claim(), NODEPOOL)
    meta, spec = body["metadata"], body["spec"]
    assert meta["generateName"] == "web-"
    assert meta["finalizers"] == ["karpenter.sh/termination"]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "name": "web",
            "uid": "pool-uid",
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["labels"]["karpenter.sh/nodepool"] == "web"
    assert meta["labels"]["team"] == "a"
    assert meta["labels"]["karpenter.kwok.sh/kwoknodeclass"] == "c"
    assert meta["annotations"]["note"] == "x"
    assert meta["annotations"]["karpenter.sh/nodepool-hash-version"] == NODEPOOL_HASH_VERSION
    assert meta["annotations"]["karpenter.sh/nodepool-hash"].isdigit()
    keys = {r["key"] for r in spec["requirements"]}
    assert "kubernetes.io/hostname" not in keys
    assert {"node.kubernetes.io/instance-type", "karpenter.sh/nodepool"} <= keys
    assert spec["resources"]["requests"] == {"cpu": "1500m", "memory": "2Gi", "pods": "3"}
    assert spec["taints"] == [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
    assert spec["startupTaints"] == [{"key": "init", "effect": "NoExecute"}]
    assert spec["nodeClassRef"]["name"] == "c"
    assert spec["expireAfter"] == "24h"
    assert spec["terminationGracePeriod"] == "1h"


def test_nodeclaim_is_valid_for_the_crd() -> None:
    from karpy.apis.v1 import validate_nodeclaim

    body = nodeclaim_for(_claim(), NODEPOOL)
    body["metadata"]["name"] = "web-abcde"
    validate_nodeclaim(body)


def test_min_values_relaxed_annotation() -> None:
    body = nodeclaim_for(_claim(min_values_relaxed=True), NODEPOOL)
    assert body["metadata"]["annotations"]["karpenter.sh/nodeclaim-min-values-relaxed"] == "true"
    body = nodeclaim_for(_claim(), NODEPOOL)
    assert body["metadata"]["annotations"]["karpenter.sh/nodeclaim-min-values-relaxed"] == "false"


def test_limits_exceeded_reports_the_resource() -> None:
    assert limits_exceeded(None, {"cpu": 10_000}) is None
    assert limits_exceeded({"cpu": "10"}, {"cpu": 10_000}) is None
    exceeded = limits_exceeded({"cpu": "10", "memory": "1Ti"}, {"cpu": 12_000})
    assert exceeded is not None and exceeded.startswith("cpu resource usage of 12")
    assert limits_exceeded({"nodes": "2"}, {"nodes": 3}) is not None
