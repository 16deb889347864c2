"""Karpenter's pod validation: pods karpy will not provision for, and why."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.controllers.provisioning.provisioner import well_known_labels
from karpy.controllers.provisioning.validation import PodValidationError, validate_pod
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirement
from tests.kit import pod


def _affinity(*exprs: dict[str, Any], fields: bool = False) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields:
        term["matchFields"] = [{"key": "metadata.name", "operator": "In", "values": ["n"]}]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"nodeSelector": {"kubernetes.io/arch": "arm64", "team": "a"}},
        {"nodeSelector": {"karpenter.sh/capacity-type": "spot", "node.kubernetes.io/foo": "x"}},
        {
            "affinity": _affinity(
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
            )
        },
        {"affinity": _affinity({"key": "example.com/gpu", "operator": "Gt", "values": ["2"]})},
    ],
)
def test_accepted(spec: dict[str, Any]) -> None:
    validate_pod(pod(namespace="ns", spec=spec))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"affinity": _affinity({"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"})},
            "DoesNotExist requirement",
        ),
        ({"nodeSelector": {"karpenter.sh/custom": "x"}}, "label karpenter.sh/custom is restricted"),
        ({"nodeSelector": {"kubernetes.io/hostname": "n1"}}, "restricted"),
        ({"nodeSelector": {"team": "bad value!"}}, "invalid value"),
        ({"nodeSelector": {"bad key!": "x"}}, "not a valid label key"),
        (
            {"affinity": _affinity({"key": "a", "operator": "Near", "values": ["x"]})},
            "unsupported operator",
        ),
        ({"affinity": _affinity({"key": "a", "operator": "In"})}, "must have a value"),
        ({"affinity": _affinity({"key": "a", "operator": "Gt", "values": ["x"]})}, "integer"),
        ({"affinity": _affinity(fields=True)}, "matchFields is not supported"),
    ],
)
def test_rejected(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(PodValidationError, match=message):
        validate_pod(pod(namespace="ns", spec=spec))


def test_volumes_need_their_claim_and_storage_class() -> None:
    claiming = pod(
        namespace="ns", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    )
    claims = {"ns/data": {"spec": {"storageClassName": "fast"}}}
    with pytest.raises(PodValidationError, match='persistentvolumeclaim "ns/data"'):
        validate_pod(claiming, pvc=lambda ns, n: None, storage_class=lambda n: {})
    with pytest.raises(PodValidationError, match='storageclass "fast"'):
        validate_pod(
            claiming, pvc=lambda ns, n: claims.get(f"{ns}/{n}"), storage_class=lambda n: None
        )
    validate_pod(claiming, pvc=lambda ns, n: claims.get(f"{ns}/{n}"), storage_class=lambda n: {})
    bound = {"ns/data": {"spec": {"storageClassName": "gone", "volumeName": "pv-1"}}}
    validate_pod(claiming, pvc=lambda ns, n: bound.get(f"{ns}/{n}"), storage_class=lambda n: None)


def test_well_known_labels_include_the_labels_the_providers_instance_types_carry() -> None:
    family = "karpenter.kwok.sh/instance-family"
    assert family not in well_known_labels([])
    pool = NodePoolTemplate(name="default", instance_types=kwok_instance_types())
    assert family in well_known_labels([pool])
    assert well_known_labels([]) <= well_known_labels([pool])


def test_a_label_the_provider_keeps_to_itself_stays_restricted_though_its_types_carry_it() -> None:
    # The Azure SKUs' Hyper-V generation picks their node image; upstream restricts it.
    restricted = "karpenter.azure.com/sku-hyperv-generation"
    (base, *_) = kwok_instance_types()
    carrying = InstanceType(
        name=base.name,
        capacity=base.capacity,
        offerings=base.offerings,
        requirements=base.requirements.add(
            Requirement(restricted, complement=False, values=("1", "2"))
        ),
    )
    well_known = well_known_labels([NodePoolTemplate(name="default", instance_types=[carrying])])
    assert restricted not in well_known
    assert "karpenter.kwok.sh/instance-family" in well_known
    with pytest.raises(PodValidationError, match=f"label {restricted} is restricted"):
        validate_pod(
            pod(namespace="ns", spec={"nodeSelector": {restricted: "1"}}), well_known=well_known
        )
    spec = {"affinity": _affinity({"key": restricted, "operator": "In", "values": ["2"]})}
    with pytest.raises(PodValidationError, match=f"label {restricted} is restricted"):
        validate_pod(pod(namespace="ns", spec=spec), well_known=well_known)
