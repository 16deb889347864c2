"""The NodePool hash: stable under reordering and equivalent spellings, sensitive to every
hashed field, blind to requirements (checked by requirements drift instead)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from karpy.apis.v1 import NodePool, validate_nodepool
from karpy.apis.v1.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION,
)
from karpy.controllers.nodepool.hash import hash_annotations, nodepool_hash


def pool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "np"},
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "a", "tier": "web"}, "annotations": {"x": "1"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "local",
                    },
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                    ],
                    "taints": [
                        {"key": "a", "value": "1", "effect": "NoSchedule"},
                        {"key": "b", "effect": "NoExecute"},
                    ],
                    "expireAfter": "720h",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        },
    }


def test_hash_is_a_decimal_uint64_and_deterministic() -> None:
    value = nodepool_hash(pool())
    assert value.isdigit()
    assert 0 <= int(value) < 2**64
    assert nodepool_hash(pool()) == value


def test_annotations_use_karpys_hash_version() -> None:
    annotations = hash_annotations(pool())
    assert annotations[ANNOTATION_NODEPOOL_HASH] == nodepool_hash(pool())
    assert annotations[ANNOTATION_NODEPOOL_HASH_VERSION] == NODEPOOL_HASH_VERSION
    assert NODEPOOL_HASH_VERSION != "v3"  # never Karpenter's own version


def test_model_and_raw_dict_agree() -> None:
    raw = pool()
    model = validate_nodepool(raw)
    assert isinstance(model, NodePool)
    assert nodepool_hash(model) == nodepool_hash(raw)


def _changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    obj = pool()
    node: Any = obj
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return obj


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (
            ("spec", "template", "spec", "taints"),
            [
                {"key": "b", "effect": "NoExecute"},
                {"key": "a", "value": "1", "effect": "NoSchedule"},
            ],
        ),
        (("spec", "template", "spec", "requirements"), []),
        (("spec", "template", "spec", "expireAfter"), _DELETE),
        (("spec", "template", "spec", "expireAfter"), "720h0m0s"),
        (("spec", "template", "spec", "expireAfter"), "43200m"),
        (("spec", "template", "spec", "startupTaints"), []),
        (("spec", "template", "metadata", "annotations"), {"x": "1"}),
        (
            ("spec", "template", "spec", "nodeClassRef"),
            {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "name": "local"},
        ),
        (("spec", "disruption", "consolidateAfter"), "5m"),
        (("spec", "limits"), {"cpu": "10"}),
        (("spec", "weight"), 50),
        (("metadata", "name"), "other"),
    ],
)
def test_hash_ignores_what_karpenter_does_not_hash(path: tuple[Any, ...], value: Any) -> None:
    assert nodepool_hash(_changed(path, value)) == nodepool_hash(pool())


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "template", "metadata", "labels"), {"team": "b", "tier": "web"}),
        (("spec", "template", "metadata", "annotations"), {"x": "2"}),
        (("spec", "template", "spec", "taints"), [{"key": "a", "effect": "NoSchedule"}]),
        (("spec", "template", "spec", "startupTaints"), [{"key": "s", "effect": "NoSchedule"}]),
        (("spec", "template", "spec", "expireAfter"), "24h"),
        (("spec", "template", "spec", "expireAfter"), "Never"),
        (("spec", "template", "spec", "terminationGracePeriod"), "1h"),
        (
            ("spec", "template", "spec", "nodeClassRef"),
            {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "other"},
        ),
    ],
)
def test_hash_changes_with_each_hashed_field(path: tuple[Any, ...], value: Any) -> None:
    assert nodepool_hash(_changed(path, value)) != nodepool_hash(pool())


def test_label_order_and_duplicate_list_items_do_not_matter() -> None:
    a = pool()
    b = copy.deepcopy(a)
    b["spec"]["template"]["metadata"]["labels"] = {"tier": "web", "team": "a"}
    b["spec"]["template"]["spec"]["taints"].append({"key": "b", "effect": "NoExecute"})
    assert nodepool_hash(a) == nodepool_hash(b)
