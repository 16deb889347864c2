"""NodePool runtime validation (the ValidationSucceeded condition): what the CRD cannot check."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.v1 import NodePool, runtime_validate
from karpy.apis.v1.nodepool_validation import qualified_name_error, restricted_label_error
from tests.unit.apis.apis_invalid_cases import nodepool


def _pool(**template_spec: Any) -> NodePool:
    obj = nodepool()
    obj["spec"]["template"]["spec"].update(template_spec)
    return NodePool.model_validate(obj)


def test_valid_pool_has_no_errors() -> None:
    assert runtime_validate(_pool()) == []


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("app", True),
        ("example.com/app", True),
        ("a/b/c", False),
        ("Example.com/app", False),
        ("/app", False),
        ("example.com/", False),
        ("x" * 64, False),
    ],
)
def test_qualified_names(key: str, ok: bool) -> None:
    assert (qualified_name_error(key) is None) is ok


@pytest.mark.parametrize(
    ("key", "restricted"),
    [
        ("karpenter.sh/capacity-type", False),
        ("kubernetes.io/arch", False),
        ("example.com/team", False),
        ("karpenter.sh/nodepool", True),
        ("kubernetes.io/hostname", True),
        ("karpenter.sh/anything", True),
        ("sub.karpenter.sh/anything", True),
    ],
)
def test_restricted_labels(key: str, restricted: bool) -> None:
    assert (restricted_label_error(key) is not None) is restricted


def test_label_keys_must_be_qualified_names() -> None:
    obj = nodepool()
    obj["spec"]["template"]["metadata"] = {"labels": {"a/b/c": "x"}}
    (error,) = runtime_validate(NodePool.model_validate(obj))
    assert error.startswith("spec.template.metadata.labels: invalid key 'a/b/c'")


def test_capacity_type_values_are_well_known() -> None:
    pool = _pool(
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "cheap"]}
        ]
    )
    (error,) = runtime_validate(pool)
    assert "invalid capacity type 'cheap'" in error


def test_duplicate_taints_across_taints_and_startup_taints() -> None:
    pool = _pool(
        taints=[{"key": "a", "effect": "NoSchedule"}],
        startupTaints=[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}],
    )
    (error,) = runtime_validate(pool)
    assert error.startswith("spec.template.spec.startupTaints[0]: duplicate taint a:NoSchedule")
