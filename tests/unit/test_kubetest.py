"""The test kit's stand-in kubelets for static Nodes (`hack/kubetest.py`) must leave alone the
Nodes a simulator plays the kubelet of: two writers of one Lease make the simulator stand back."""

from __future__ import annotations

from typing import Any

import pytest
from kubetest import is_static_node


def node(provider_id: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "n", "annotations": annotations or {}},
        "spec": {"providerID": provider_id},
    }


@pytest.mark.parametrize(
    ("manifest", "static"),
    [
        (node("aws:///us-east-1a/i-0abc"), True),
        (node(""), True),
        (node("kwok://n"), False),
        (node("aws:///us-east-1a/i-0abc", {"kwok.x-k8s.io/node": "fake"}), False),
    ],
    ids=["ec2-made-by-a-test", "no-provider-id", "kwok", "ec2-played-by-a-simulator"],
)
def test_static_nodes_are_those_no_simulator_plays(manifest: dict[str, Any], static: bool) -> None:
    assert is_static_node(manifest) is static
