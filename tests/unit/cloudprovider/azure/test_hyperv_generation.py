"""Hyper-V generations, as the upstream Azure provider treats them: the instance type requirement
`karpenter.azure.com/sku-hyperv-generation` from the SKU's `HyperVGenerations` capability, the
image each family gives a size by architecture and generation, and the label out of pods' reach
although the instance types carry it, while nodes of single-generation sizes carry it too."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from karpy.apis.azure.v1beta1 import labels
from karpy.cloudprovider.azure.imagefamily import VARIANTS
from karpy.cloudprovider.azure.instancetypes import instance_type
from karpy.cloudprovider.azure.provider import default_image_id
from karpy.cloudprovider.azure.skus import parse_sku
from karpy.controllers.provisioning.provisioner import well_known_labels
from karpy.controllers.provisioning.validation import PodValidationError, validate_pod
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.instancetypes import InstanceType
from tests import kit

RECORDS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "westcentralus-skus.json").read_text()
)["value"]
HYPERV = labels.LABEL_SKU_HYPERV_GENERATION
UBUNTU = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"


def _type(generations: str | None, *, arch: str = "x64") -> InstanceType:
    """Standard_D2s_v3 with the given `HyperVGenerations` (None: without the capability) and
    `CpuArchitectureType`."""
    (record,) = copy.deepcopy([r for r in RECORDS if r["name"] == "Standard_D2s_v3"])
    caps = [c for c in record["capabilities"] if c["name"] != "HyperVGenerations"]
    if generations is not None:
        caps.append({"name": "HyperVGenerations", "value": generations})
    for cap in caps:
        if cap["name"] == "CpuArchitectureType":
            cap["value"] = arch
    record["capabilities"] = caps
    sku = parse_sku(record, location="westcentralus")
    assert sku is not None
    it = instance_type(sku, region="westcentralus", prices={}, pods=110)
    assert it is not None
    return it


@pytest.mark.parametrize(
    ("capability", "operator", "values"),
    [
        ("V1", "In", ["1"]),
        ("V2", "In", ["2"]),
        ("V1,V2", "In", ["1", "2"]),
        ("v1, V2", "In", ["1", "2"]),
        # A record without the capability: upstream's DoesNotExist, left as it is.
        (None, "DoesNotExist", None),
    ],
)
def test_the_requirement_lists_the_generations_the_sku_boots(
    capability: str | None, operator: str, values: list[str] | None
) -> None:
    requirement = _type(capability).requirements[HYPERV].to_dict()
    assert requirement["operator"] == operator
    assert requirement.get("values") == values


def test_only_a_single_generation_size_labels_its_nodes() -> None:
    assert _type("V1").requirements.labels()[HYPERV] == "1"
    assert _type("V2", arch="Arm64").requirements.labels()[HYPERV] == "2"
    assert HYPERV not in _type("V1,V2").requirements.labels()
    assert HYPERV not in _type(None).requirements.labels()


def test_each_release_lists_gen2_then_gen1_amd64_then_gen2_arm64() -> None:
    order = {
        name: [(d.definition, d.arch, d.hyperv_generation) for d in definitions]
        for name, definitions in VARIANTS.items()
    }
    assert order == {
        "Ubuntu2204": [
            ("2204gen2containerd", "amd64", "2"),
            ("2204containerd", "amd64", "1"),
            ("2204gen2arm64containerd", "arm64", "2"),
        ],
        "Ubuntu2404": [
            ("2404gen2containerd", "amd64", "2"),
            ("2404containerd", "amd64", "1"),
            ("2404gen2arm64containerd", "arm64", "2"),
        ],
        "AzureLinux2": [
            ("V2gen2", "amd64", "2"),
            ("V2", "amd64", "1"),
            ("V2gen2arm64", "arm64", "2"),
        ],
        "AzureLinux3": [("V3gen2", "amd64", "2"), ("V3", "amd64", "1")],
    }


@pytest.mark.parametrize(
    ("family", "version", "generations", "arch", "expected"),
    [
        ("Ubuntu2204", "1.33.1", "V1,V2", "x64", f"{UBUNTU}/images/2204gen2containerd"),
        ("Ubuntu2204", "1.33.1", "V2", "x64", f"{UBUNTU}/images/2204gen2containerd"),
        ("Ubuntu2204", "1.33.1", "V1", "x64", f"{UBUNTU}/images/2204containerd"),
        ("Ubuntu2204", "1.33.1", "V2", "Arm64", f"{UBUNTU}/images/2204gen2arm64containerd"),
        ("Ubuntu", "1.34.0", "V1", "x64", f"{UBUNTU}/images/2404containerd"),
        ("Ubuntu2404", "1.33.1", "V1,V2", "x64", f"{UBUNTU}/images/2404gen2containerd"),
        ("Ubuntu2404", "1.33.1", "V2", "Arm64", f"{UBUNTU}/images/2404gen2arm64containerd"),
        ("AzureLinux", "1.31.4", "V1,V2", "x64", f"{AZURE_LINUX}/images/V2gen2"),
        ("AzureLinux", "1.31.4", "V1", "x64", f"{AZURE_LINUX}/images/V2"),
        ("AzureLinux", "1.31.4", "V2", "Arm64", f"{AZURE_LINUX}/images/V2gen2arm64"),
        ("AzureLinux", "1.33.1", "V1,V2", "x64", f"{AZURE_LINUX}/images/V3gen2"),
        ("AzureLinux", "1.33.1", "V1", "x64", f"{AZURE_LINUX}/images/V3"),
        # No image boots it: Azure Linux 3 on arm64, a gen1 arm64 size, no capability at all.
        ("AzureLinux", "1.33.1", "V2", "Arm64", None),
        ("Ubuntu2204", "1.33.1", "V1", "Arm64", None),
        ("Ubuntu2204", "1.33.1", None, "x64", None),
    ],
)
def test_a_size_gets_the_first_image_of_its_architecture_and_generation(
    family: str, version: str, generations: str | None, arch: str, expected: str | None
) -> None:
    found = default_image_id(family, _type(generations, arch=arch), version)
    if expected is None:
        assert found is None
    else:
        assert found == f"/CommunityGalleries/{expected}/versions/latest"


def test_a_pod_may_not_select_on_the_generation_although_the_types_carry_it() -> None:
    pool = NodePoolTemplate(name="aks", instance_types=[_type("V1"), _type("V1,V2")])
    well_known = well_known_labels([pool])
    assert HYPERV not in well_known
    # The other SKU labels stay selectable.
    validate_pod(
        kit.pod(namespace="ns", spec={"nodeSelector": {labels.LABEL_SKU_FAMILY: "D"}}),
        well_known=well_known,
    )
    with pytest.raises(PodValidationError, match=f"label {HYPERV} is restricted"):
        validate_pod(
            kit.pod(namespace="ns", spec={"nodeSelector": {HYPERV: "1"}}), well_known=well_known
        )
