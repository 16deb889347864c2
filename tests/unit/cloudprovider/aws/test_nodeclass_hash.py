"""The EC2NodeClass hash equals Karpenter's: every golden value (computed by the AWS provider's own
code, see hack/ec2nodeclass-hash/README.md) is reproduced from the raw documents and from the
EC2NodeClass model, and the hash ignores what Karpenter's ignores."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.cloudprovider.aws.nodeclasshash import (
    NODECLASS_HASH_VERSION,
    ami_family,
    hash_annotations,
    kubelet_json,
    nodeclass_hash,
)

GOLDEN: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "ec2nodeclass_hash_golden.json").read_text()
)
BY_NAME = {case["name"]: case for case in GOLDEN}


def test_golden_table_is_complete() -> None:
    assert len(GOLDEN) >= 25
    assert len(BY_NAME) == len(GOLDEN)
    assert {case["hashVersion"] for case in GOLDEN} == {NODECLASS_HASH_VERSION} == {"v6"}
    assert len({case["hash"] for case in GOLDEN}) >= 20  # the cases exercise distinct inputs


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_hash_equals_karpenters(case: dict[str, Any]) -> None:
    assert nodeclass_hash(case["nodeClass"], case["caBundle"]) == case["hash"]


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_key_order_does_not_matter(case: dict[str, Any]) -> None:
    assert nodeclass_hash(_reversed_keys(case["nodeClass"]), case["caBundle"]) == case["hash"]


# The model defaults metadataOptions as the apiserver does, and has no enclaveOptions (v1.14's
# schema): every case that spells metadataOptions out hashes the same through the model.
MODEL_CASES = [
    c["name"]
    for c in GOLDEN
    if "metadataOptions" in c["nodeClass"]["spec"]
    and "enclaveOptions" not in c["nodeClass"]["spec"]
]


@pytest.mark.parametrize("name", MODEL_CASES)
def test_model_hash_equals_karpenters(name: str) -> None:
    case = BY_NAME[name]
    model = EC2NodeClass.model_validate(case["nodeClass"])
    assert nodeclass_hash(model, case["caBundle"]) == case["hash"]


def test_stored_objects_hash_like_their_defaulted_golden_case() -> None:
    assert len(MODEL_CASES) >= 6
    # As stored, a class written without metadataOptions has the CRD's defaults.
    model = EC2NodeClass.model_validate(BY_NAME["minimal-alias"]["nodeClass"])
    assert nodeclass_hash(model) == BY_NAME["minimal-alias-defaulted"]["hash"]
    assert nodeclass_hash(model) != BY_NAME["minimal-alias"]["hash"]


def test_what_is_not_hashed_and_what_is() -> None:
    # Selector terms and ipPrefixCount are not hashed; the resolved AMI family is.
    assert BY_NAME["other-selectors"]["hash"] == BY_NAME["minimal-alias-defaulted"]["hash"]
    assert (
        BY_NAME["explicit-family-same-as-alias"]["hash"]
        == BY_NAME["minimal-alias-defaulted"]["hash"]
    )
    assert BY_NAME["alias-custom-family"]["hash"] != BY_NAME["minimal-alias"]["hash"]
    # Block devices are a set, and a volume size counts by its canonical quantity.
    assert BY_NAME["block-devices"]["hash"] == BY_NAME["block-devices-reordered"]["hash"]
    # An empty kubelet block marshals as null, like an absent one.
    assert BY_NAME["kubelet-empty"]["hash"] == BY_NAME["minimal-alias"]["hash"]
    # role, instanceProfile and the CA bundle count.
    assert BY_NAME["other-role"]["hash"] != BY_NAME["minimal-alias"]["hash"]
    assert BY_NAME["instance-profile"]["hash"] != BY_NAME["minimal-alias"]["hash"]
    assert BY_NAME["ca-bundle"]["hash"] != BY_NAME["minimal-alias-defaulted"]["hash"]


def test_metadata_does_not_count() -> None:
    case = copy.deepcopy(BY_NAME["everything"])
    case["nodeClass"]["metadata"] = {"name": "renamed", "annotations": {"a": "b"}, "uid": "x"}
    case["nodeClass"]["status"] = {"subnets": [{"id": "subnet-1", "zone": "us-east-1a"}]}
    assert nodeclass_hash(case["nodeClass"], case["caBundle"]) == BY_NAME["everything"]["hash"]


def test_ami_family_and_kubelet_serialization() -> None:
    assert ami_family({"amiSelectorTerms": [{"alias": "bottlerocket@latest"}]}) == "Bottlerocket"
    assert ami_family({"amiFamily": "Custom", "amiSelectorTerms": [{"alias": "al2@x"}]}) == "Custom"
    assert ami_family({"amiSelectorTerms": [{"id": "ami-1"}]}) == "Custom"
    assert kubelet_json(None) == kubelet_json({}) == "null"
    # Go's encoding: sorted keys, compact, HTML characters escaped, UTF-8 kept.
    assert kubelet_json({"z": 1, "a": {"y": "<&>", "b": "é"}}) == (
        '{"a":{"b":"é","y":"\\u003c\\u0026\\u003e"},"z":1}'
    )


def test_annotations() -> None:
    case = BY_NAME["ca-bundle"]
    assert hash_annotations(case["nodeClass"], case["caBundle"]) == {
        "karpenter.k8s.aws/ec2nodeclass-hash": case["hash"],
        "karpenter.k8s.aws/ec2nodeclass-hash-version": "v6",
    }
