"""The NodePool hash equals Karpenter's: every golden value (computed by Karpenter's own code, see
hack/nodepool-hash/README.md) is reproduced, from raw dicts and from the NodePool model, and the
hash ignores what Go's decoding and hashstructure ignore."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from karpy.apis.v1 import NodePool, validate_nodepool
from karpy.apis.v1.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION,
)
from karpy.controllers.nodepool.hash import hash_annotations, nodepool_hash

GOLDEN: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "nodepool_hash_golden.json").read_text()
)
BY_NAME = {case["name"]: case for case in GOLDEN}


def test_golden_table_is_complete() -> None:
    assert len(GOLDEN) >= 20
    assert len(BY_NAME) == len(GOLDEN)
    assert {case["hashVersion"] for case in GOLDEN} == {"v3"}


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_hash_equals_karpenters(case: dict[str, Any]) -> None:
    assert nodepool_hash(case["nodePool"]) == case["hash"]


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_key_order_does_not_matter(case: dict[str, Any]) -> None:
    # The golden documents come with sorted keys (Go's JSON encoding of maps).
    assert nodepool_hash(_reversed_keys(case["nodePool"])) == case["hash"]


# Cases valid under the NodePool model with expireAfter written out (the model, like the
# apiserver, defaults an absent one to 720h). Not taint-time-added-offset-fraction: the model keeps
# times as Python datetimes, to the microsecond, where Go keeps nanoseconds.
MODEL_CASES = [
    "minimal-defaulted",
    "requirements-disruption-limits-changed",
    "expire-after-24h",
    "expire-after-never",
    "termination-grace-period",
    "node-class-ref-aws",
    "labels",
    "labels-empty-map",
    "annotations",
    "taints",
    "taints-duplicated",
    "taints-empty-list",
    "taint-time-added",
    "startup-taints",
    "everything",
]


@pytest.mark.parametrize("name", MODEL_CASES)
def test_model_gives_karpenters_hash(name: str) -> None:
    model = validate_nodepool(copy.deepcopy(BY_NAME[name]["nodePool"]))
    assert isinstance(model, NodePool)
    assert nodepool_hash(model) == BY_NAME[name]["hash"]


def test_model_defaults_expire_after_as_the_apiserver_does() -> None:
    raw = copy.deepcopy(BY_NAME["minimal-defaulted"]["nodePool"])
    del raw["spec"]["template"]["spec"]["expireAfter"]
    model = validate_nodepool(raw)
    assert isinstance(model, NodePool)
    assert nodepool_hash(model) == BY_NAME["minimal-defaulted"]["hash"]


def test_golden_equalities_and_differences() -> None:
    """What the table shows of Karpenter's hash, spelled out (a regenerated table must keep it)."""

    def same(*names: str) -> bool:
        return len({BY_NAME[n]["hash"] for n in names}) == 1

    assert same("empty-template", "empty-template-spec")
    assert same("minimal-defaulted", "requirements-disruption-limits-changed", "empty-metadata")
    assert same("minimal-defaulted", "expire-after-same-duration-other-spelling")
    assert same("minimal", "expire-after-never")
    assert same("labels", "labels-reordered")
    assert same("taints", "taints-permuted", "taints-empty-value")
    assert same("startup-taints", "startup-taints-permuted")
    assert same("everything", "everything-reordered")
    for a, b in [
        ("minimal", "minimal-defaulted"),
        ("expire-after-never", "expire-after-zero"),
        ("labels", "labels-swapped-key-value"),
        ("labels", "annotations-same-pairs-as-labels"),
        ("labels-empty-map", "minimal-defaulted"),
        ("taints-empty-list", "minimal-defaulted"),
        ("startup-taints", "startup-taints-as-taints"),
        ("only-empty-requirements", "empty-template"),
    ]:
        assert not same(a, b), (a, b)


def test_annotations_carry_karpenters_hash_version() -> None:
    pool = BY_NAME["everything"]["nodePool"]
    annotations = hash_annotations(pool)
    assert annotations == {
        ANNOTATION_NODEPOOL_HASH: BY_NAME["everything"]["hash"],
        ANNOTATION_NODEPOOL_HASH_VERSION: "v3",
    }
    assert NODEPOOL_HASH_VERSION == "v3"


def _with(name: str, path: tuple[str, ...], value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(BY_NAME[name]["nodePool"])
    node: Any = obj
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    return obj


TSPEC = ("spec", "template", "spec")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        # Nulls are Go nils (the apiserver prunes them anyway).
        ((*TSPEC, "taints"), None),
        ((*TSPEC, "terminationGracePeriod"), None),
        (("spec", "template", "metadata", "labels"), None),
        # Unknown fields vanish in Go's decoding.
        ((*TSPEC, "kubelet"), {"maxPods": 110}),
        (("spec", "template", "metadata", "finalizers"), ["x"]),
        # The legacy apiVersion form (karpy only) hashes as its group.
        (
            (*TSPEC, "nodeClassRef"),
            {
                "apiVersion": "karpenter.kwok.sh/v1alpha1",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
        ),
        ((*TSPEC, "expireAfter"), "43200m"),
    ],
)
def test_what_does_not_change_the_hash(path: tuple[str, ...], value: Any) -> None:
    assert (
        nodepool_hash(_with("minimal-defaulted", path, value))
        == (BY_NAME["minimal-defaulted"]["hash"])
    )


@pytest.mark.parametrize(
    "value", ["", "1", "1x", "720", "Forever"], ids=["empty", "no-unit", "bad-unit", "int", "word"]
)
def test_a_malformed_duration_hashes_without_error(value: str) -> None:
    # The CRD patterns reject these and Karpenter could not decode them; karpy still answers.
    pool = _with("minimal-defaulted", (*TSPEC, "expireAfter"), value)
    assert nodepool_hash(pool) != BY_NAME["minimal-defaulted"]["hash"]
    assert nodepool_hash(pool).isdigit()
