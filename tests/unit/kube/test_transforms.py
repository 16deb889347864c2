"""Ingest transforms: keep what karpy reads, drop the rest, share equal sub-trees."""

from __future__ import annotations

import copy
import json
from typing import Any

from karpy.kube.transforms import (
    LAST_APPLIED,
    Interner,
    Shared,
    make_transform,
    strip_managed_fields,
    trim_node,
    trim_pod,
)
from tests.bench.bench_informer import realistic_pod


def test_pod_keeps_scheduling_inputs_and_drops_bulk() -> None:
    raw = realistic_pod(3, namespace="shop", deployment="web")
    raw["metadata"]["annotations"][LAST_APPLIED] = "{...}"
    before = copy.deepcopy(raw)
    trimmed = trim_pod(raw)
    assert raw == before  # the input is not mutated
    meta = trimmed["metadata"]
    assert meta["name"] == raw["metadata"]["name"] and meta["namespace"] == "shop"
    assert "managedFields" not in meta
    assert LAST_APPLIED not in meta["annotations"]
    assert meta["ownerReferences"][0]["kind"] == "ReplicaSet"
    spec = trimmed["spec"]
    requests = [c["resources"]["requests"] for c in spec["containers"]]
    assert requests == [c["resources"]["requests"] for c in raw["spec"]["containers"]]
    assert all(
        set(c) <= {"name", "resources", "ports", "restartPolicy"} for c in spec["containers"]
    )
    assert spec["tolerations"] == raw["spec"]["tolerations"]
    assert spec["affinity"] == raw["spec"]["affinity"]
    assert spec["topologySpreadConstraints"] == raw["spec"]["topologySpreadConstraints"]
    # only storage-binding volumes remain
    assert [v["name"] for v in spec["volumes"]] == ["data"]
    assert trimmed["status"]["phase"] == raw["status"]["phase"]
    # do-not-disrupt durations run from the pod's start
    assert trimmed["status"]["startTime"] == raw["status"]["startTime"]
    assert "containerStatuses" not in trimmed["status"]
    assert len(json.dumps(trimmed)) < len(json.dumps(raw)) / 4


def test_replicas_share_identical_sub_trees() -> None:
    a = trim_pod(realistic_pod(1, namespace="shop", deployment="web"))
    b = trim_pod(realistic_pod(2, namespace="shop", deployment="web"))
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"]
    assert a["metadata"]["name"] != b["metadata"]["name"]


def test_replicas_share_annotation_values_and_timestamps() -> None:
    a = trim_pod(realistic_pod(1, namespace="shop", deployment="web"))
    b = trim_pod(realistic_pod(61, namespace="shop", deployment="web"))  # same start second
    checksum = "checksum/config"
    assert a["metadata"]["annotations"][checksum] is b["metadata"]["annotations"][checksum]
    assert a["metadata"]["creationTimestamp"] is b["metadata"]["creationTimestamp"]
    assert a["status"]["startTime"] is b["status"]["startTime"]
    long_value = "x" * 1000
    raw = realistic_pod(2)
    raw["metadata"]["annotations"]["blob"] = long_value
    assert trim_pod(raw)["metadata"]["annotations"]["blob"] == long_value


def test_host_ports_survive_other_ports_do_not() -> None:
    raw = realistic_pod(1)
    raw["spec"]["containers"][0]["ports"] = [
        {"containerPort": 80, "protocol": "TCP"},
        {"containerPort": 9100, "hostPort": 9100, "protocol": "TCP"},
    ]
    ports = trim_pod(raw)["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 9100, "hostPort": 9100, "protocol": "TCP"}]


def test_node_drops_images_keeps_capacity_and_provider_id() -> None:
    node: dict[str, Any] = {
        "metadata": {"name": "n1", "labels": {"a": "b"}, "managedFields": [{"x": 1}]},
        "spec": {
            "providerID": "aws:///us-east-1a/i-1",
            "taints": [{"key": "k", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "4"},
            "allocatable": {"cpu": "3900m"},
            "images": [{"names": ["x" * 100], "sizeBytes": 1}] * 50,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": "t",
                    "reason": "KubeletReady",
                }
            ],
        },
    }
    trimmed = trim_node(node)
    assert trimmed["spec"]["providerID"] == "aws:///us-east-1a/i-1"
    assert trimmed["status"]["allocatable"] == {"cpu": "3900m"}
    assert "images" not in trimmed["status"]
    assert "managedFields" not in trimmed["metadata"]
    assert trimmed["status"]["conditions"] == [
        {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    ]


def test_strip_managed_fields_keeps_everything_else() -> None:
    obj = {"metadata": {"name": "x", "managedFields": [1]}, "spec": {"a": 1}, "status": {"b": 2}}
    out = strip_managed_fields(obj)
    assert out == {"metadata": {"name": "x"}, "spec": {"a": 1}, "status": {"b": 2}}
    assert "managedFields" in obj["metadata"]
    plain = {"metadata": {"name": "y"}}
    assert strip_managed_fields(plain) is plain


def test_custom_mask_with_callable_and_bounded_interner() -> None:
    interner = Interner(max_entries=2)
    transform = make_transform(
        {"spec": {"size": lambda v: v * 2, "tags": Shared(True)}}, interner=interner
    )
    out = [transform({"spec": {"size": i, "tags": [str(i)], "junk": 1}}) for i in range(5)]
    assert [o["spec"]["size"] for o in out] == [0, 2, 4, 6, 8]
    assert all("junk" not in o["spec"] for o in out)
    assert 1 <= len(interner) <= 2  # the interner passed in is the one used, even when empty


def test_transforms_given_one_interner_share_through_it() -> None:
    interner = Interner()
    first = make_transform({"tags": Shared(True)}, interner=interner)
    second = make_transform({"labels": Shared(True)}, interner=interner)
    a = first({"tags": {"team": "shop"}})
    b = second({"labels": {"team": "shop"}})
    assert a["tags"] is b["labels"]
    assert len(interner) == 1


def test_node_owner_references_keep_block_owner_deletion() -> None:
    """Owners written back from the cache (a merge patch replaces the list) keep every field
    Karpenter's NodeClaim reference has."""
    owner = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "name": "default-abc",
        "uid": "u-1",
        "blockOwnerDeletion": True,
    }
    trimmed = trim_node({"metadata": {"name": "n", "ownerReferences": [owner]}})
    assert trimmed["metadata"]["ownerReferences"] == [owner]
