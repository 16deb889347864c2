"""Which image of an alias each instance type boots, and which types a family cannot boot.

The images come from the alias's own SSM parameter list (`alias_parameters`), ranked by
`best_amis` as the resolver ranks them, and the types are built from real `DescribeInstanceTypes`
entries: a standard type, an NVIDIA GPU type, two Neuron types (Inferentia, Trainium) and
Graviton types.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from karpy.apis.v1.labels import LABEL_OS, LABEL_WINDOWS_BUILD
from karpy.cloudprovider.aws.capacity import CapacitySettings
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.compatibility import ami_requirements, compatible, image_for
from karpy.cloudprovider.aws.instancetypes import build_instance_type
from karpy.cloudprovider.aws.nodeclass import alias_parameters, best_amis
from karpy.cloudprovider.aws.pricing import PricingProvider
from karpy.scheduling.instancetypes import InstanceType
from tests.unit.cloudprovider.aws.shapes import (
    A1_LARGE,
    C6G_XLARGE,
    G4DN_XLARGE,
    INF2_XLARGE,
    M5_LARGE,
    TRN1_2XLARGE,
)

K8S = "1.33"
ZONE = "us-east-1a"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
PRICING = PricingProvider(AWSClients("us-east-1"))
ARCH = {"amd64": "x86_64", "arm64": "arm64"}


def instance_type(info: dict[str, Any], family: str) -> InstanceType:
    return build_instance_type(
        info,
        zones=[ZONE],
        offered_zones=[ZONE],
        pricing=PRICING,
        settings=CapacitySettings(ami_family=family),
    )


def booted_by(alias_family: str, family: str, version: str = "latest") -> dict[str, str | None]:
    """Type name -> the SSM parameter whose image it boots (each parameter is its own image)."""
    params = alias_parameters(alias_family, version, K8S)
    images = [
        ({"ImageId": p.name, "Architecture": ARCH[p.arch], "CreationDate": "2025"}, p.variant)
        for p in params
    ]
    amis = ami_requirements(best_amis(images, NOW))
    shapes = (M5_LARGE, G4DN_XLARGE, INF2_XLARGE, TRN1_2XLARGE, C6G_XLARGE)
    return {
        str(info["InstanceType"]): image_for(instance_type(info, family).requirements, amis)
        for info in shapes
    }


def test_bottlerocket_gpu_types_take_the_nvidia_image_and_neuron_the_standard_one() -> None:
    base = f"/aws/service/bottlerocket/aws-k8s-{K8S}"
    assert booted_by("bottlerocket", "Bottlerocket") == {
        "m5.large": f"{base}/x86_64/latest/image_id",
        "g4dn.xlarge": f"{base}-nvidia/x86_64/latest/image_id",
        "inf2.xlarge": f"{base}/x86_64/latest/image_id",
        "trn1.2xlarge": f"{base}/x86_64/latest/image_id",
        "c6g.xlarge": f"{base}/arm64/latest/image_id",
    }


def test_al2023_neuron_types_take_the_neuron_image() -> None:
    base = f"/aws/service/eks/optimized-ami/{K8S}/amazon-linux-2023"
    assert booted_by("al2023", "AL2023") == {
        "m5.large": f"{base}/x86_64/standard/recommended/image_id",
        "g4dn.xlarge": f"{base}/x86_64/nvidia/recommended/image_id",
        "inf2.xlarge": f"{base}/x86_64/neuron/recommended/image_id",
        "trn1.2xlarge": f"{base}/x86_64/neuron/recommended/image_id",
        "c6g.xlarge": f"{base}/arm64/standard/recommended/image_id",
    }


def test_al2_gpu_image_serves_nvidia_and_neuron_types() -> None:
    base = f"/aws/service/eks/optimized-ami/{K8S}"
    assert booted_by("al2", "AL2") == {
        "m5.large": f"{base}/amazon-linux-2/recommended/image_id",
        "g4dn.xlarge": f"{base}/amazon-linux-2-gpu/recommended/image_id",
        "inf2.xlarge": f"{base}/amazon-linux-2-gpu/recommended/image_id",
        "trn1.2xlarge": f"{base}/amazon-linux-2-gpu/recommended/image_id",
        "c6g.xlarge": f"{base}/amazon-linux-2-arm64/recommended/image_id",
    }


def test_al2_pinned_versions_read_each_images_release_parameter() -> None:
    names = sorted({p.name for p in alias_parameters("al2", "v20240625", "1.30")})
    base = "/aws/service/eks/optimized-ami/1.30"
    assert names == [
        f"{base}/amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20240625/image_id",
        f"{base}/amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240625/image_id",
        f"{base}/amazon-linux-2/amazon-eks-node-1.30-v20240625/image_id",
    ]


def test_bottlerocket_pinned_versions_drop_the_leading_v() -> None:
    names = {p.name for p in alias_parameters("bottlerocket", "v1.20.0", K8S)}
    assert f"/aws/service/bottlerocket/aws-k8s-{K8S}-nvidia/arm64/1.20.0/image_id" in names
    assert f"/aws/service/bottlerocket/aws-k8s-{K8S}/x86_64/1.20.0/image_id" in names


def test_windows_boots_only_x86_64_types_and_labels_the_build() -> None:
    booted = booted_by("windows2022", "Windows2022")
    image = f"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-{K8S}"
    assert booted["m5.large"] == f"{image}/image_id"
    assert booted["c6g.xlarge"] is None
    m5 = instance_type(M5_LARGE, "Windows2022")
    assert m5.requirements.labels()[LABEL_WINDOWS_BUILD] == "10.0.20348"
    assert m5.requirements.labels()[LABEL_OS] == "windows"
    assert any(o.available for o in m5.offerings)
    graviton = instance_type(C6G_XLARGE, "Windows2022")
    assert graviton.offerings and not any(o.available for o in graviton.offerings)


@pytest.mark.parametrize(
    ("family", "build"),
    [("Windows2019", "10.0.17763"), ("Windows2022", "10.0.20348"), ("Windows2025", "10.0.26100")],
)
def test_each_windows_family_has_its_build(family: str, build: str) -> None:
    labels = instance_type(M5_LARGE, family).requirements.labels()
    assert labels[LABEL_WINDOWS_BUILD] == build


def test_linux_types_carry_no_windows_build() -> None:
    labels = instance_type(M5_LARGE, "AL2023").requirements.labels()
    assert LABEL_WINDOWS_BUILD not in labels


@pytest.mark.parametrize(
    ("family", "bootable"),
    [("AL2023", False), ("AL2", True), ("Bottlerocket", True), ("Custom", True)],
)
def test_a1_types_are_unavailable_only_with_al2023(family: str, bootable: bool) -> None:
    assert compatible(A1_LARGE, family) is bootable
    a1 = instance_type(A1_LARGE, family)
    assert a1.offerings  # kept in the list, as the provider contract asks
    assert any(o.available for o in a1.offerings) is bootable
    # Other Graviton types are not affected.
    assert any(o.available for o in instance_type(C6G_XLARGE, family).offerings)
