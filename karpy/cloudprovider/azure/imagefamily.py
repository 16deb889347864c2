"""Which AKS node images an AKSNodeClass's `imageFamily` means, for the cluster's Kubernetes
version, as the upstream Azure provider (v1.7.x) chooses them from the community galleries.

The family alone does not name an image: AKS moves its defaults with the Kubernetes version, so
the same manifest gets a newer OS when the cluster is upgraded past a boundary.

- `Ubuntu` (the default): Ubuntu 22.04 before Kubernetes 1.34, Ubuntu 24.04 from 1.34.0;
- `Ubuntu2204` and `Ubuntu2404`: that release whatever the version;
- `AzureLinux`: Azure Linux 2 (`V2*`) before Kubernetes 1.32, Azure Linux 3 (`V3*`) from
  1.32.0. Azure Linux 3 publishes no arm64 image to the community gallery (upstream takes it from
  AKS's shared image gallery only), so from 1.32 an `AzureLinux` class has amd64 images only;
- a version that does not parse keeps the older choice (22.04, Azure Linux 2), as upstream's;
- a pre-release is below its release (`1.34.0-rc.1` still means 22.04), as semver orders them;
- `Windows2022`, `Windows2025`: none. Their images are in AKS's shared image gallery, not the
  community galleries, and upstream launches Windows nodes only through AKS's Machine API
  (`PROVISION_MODE=aksmachineapi`); its "aksscriptless" mode, the one karpy implements, has no
  Windows bootstrapping (`WINDOWS_UNSUPPORTED` says so on the class).

A release lists its definitions in upstream's order of preference, the first one an instance
type is compatible with wins: the Hyper-V generation 2 amd64 image, then the generation 1 amd64
image, then the generation 2 arm64 image (Azure Linux 3: no arm64 one, see above). Each carries
the requirements an instance type must meet, `kubernetes.io/arch` and
`karpenter.azure.com/sku-hyperv-generation` (the generations the SKU's `HyperVGenerations`
capability lists, `instancetypes`): a size that boots both generations gets the generation 2
image, a size that boots only generation 1 (the Av2 sizes, for one) the generation 1 image, which
a generation 2 image would not boot. FIPS images are only in the shared image galleries.
"""

from __future__ import annotations

import re
from typing import Any, Final, NamedTuple

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.v1.labels import ARCH_AMD64, ARCH_ARM64, LABEL_ARCH

__all__ = [
    "AZURE_LINUX_3_FROM",
    "AZURE_LINUX_GALLERY",
    "UBUNTU_2404_FROM",
    "UBUNTU_GALLERY",
    "VARIANTS",
    "WINDOWS_FAMILIES",
    "ImageDefinition",
    "image_definitions",
    "image_id",
    "variant",
    "version_at_least",
    "windows_unsupported",
]

UBUNTU_GALLERY: Final = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX_GALLERY: Final = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"

UBUNTU_2404_FROM: Final = (1, 34)
"""The first Kubernetes minor whose default `Ubuntu` family is 24.04."""
AZURE_LINUX_3_FROM: Final = (1, 32)
"""The first Kubernetes minor whose `AzureLinux` family is Azure Linux 3."""

WINDOWS_FAMILIES: Final = frozenset({"Windows2022", "Windows2025"})


class ImageDefinition(NamedTuple):
    """One community gallery image definition, with the architecture and Hyper-V generation of
    the VMs it boots."""

    arch: str
    hyperv_generation: str
    gallery: str
    definition: str

    def requirements(self) -> list[dict[str, Any]]:
        """What an instance type must allow to boot this image, as the NodeSelectorRequirements
        of an AKSNodeClass's `status.images` entry."""
        return [
            {"key": LABEL_ARCH, "operator": "In", "values": [self.arch]},
            {
                "key": azure.LABEL_SKU_HYPERV_GENERATION,
                "operator": "In",
                "values": [self.hyperv_generation],
            },
        ]


def _images(
    gallery: str, gen2: str, gen1: str, gen2_arm64: str | None
) -> tuple[ImageDefinition, ...]:
    """A release's definitions in upstream's preference order: gen2 amd64, gen1 amd64, gen2
    arm64 (when the community gallery has one)."""
    found = [
        ImageDefinition(ARCH_AMD64, azure.HYPERV_GENERATION_V2, gallery, gen2),
        ImageDefinition(ARCH_AMD64, azure.HYPERV_GENERATION_V1, gallery, gen1),
    ]
    if gen2_arm64 is not None:
        found.append(ImageDefinition(ARCH_ARM64, azure.HYPERV_GENERATION_V2, gallery, gen2_arm64))
    return tuple(found)


VARIANTS: Final[dict[str, tuple[ImageDefinition, ...]]] = {
    "Ubuntu2204": _images(
        UBUNTU_GALLERY, "2204gen2containerd", "2204containerd", "2204gen2arm64containerd"
    ),
    "Ubuntu2404": _images(
        UBUNTU_GALLERY, "2404gen2containerd", "2404containerd", "2404gen2arm64containerd"
    ),
    "AzureLinux2": _images(AZURE_LINUX_GALLERY, "V2gen2", "V2", "V2gen2arm64"),
    "AzureLinux3": _images(AZURE_LINUX_GALLERY, "V3gen2", "V3", None),
}
"""The concrete OS releases a family can mean, with their community gallery definitions in the
order they are preferred (the first one an instance type is compatible with wins)."""

_SEMVER: Final = re.compile(
    r"v?(?P<major>\d+)(?:\.(?P<minor>\d+))?(?:\.(?P<patch>\d+))?(?P<pre>-[0-9A-Za-z.-]+)?"
    r"(?:\+[0-9A-Za-z.-]+)?"
)


def version_at_least(version: str, minor: tuple[int, int]) -> bool:
    """Whether a Kubernetes version (`1.33.1`, `v1.34`, `1.34.0-rc.1+abc`) is at or above
    `major.minor.0`; False when it does not parse."""
    m = _SEMVER.fullmatch(version.strip())
    if m is None:
        return False
    parts = (int(m["major"]), int(m["minor"] or 0), int(m["patch"] or 0))
    floor = (*minor, 0)
    if parts != floor:
        return parts > floor
    return m["pre"] is None


def variant(family: str, kubernetes_version: str) -> str | None:
    """The OS release (a `VARIANTS` key) an image family means at a Kubernetes version; None
    for the Windows families and unknown names."""
    if family in ("", "Ubuntu"):
        return (
            "Ubuntu2404" if version_at_least(kubernetes_version, UBUNTU_2404_FROM) else "Ubuntu2204"
        )
    if family in ("Ubuntu2204", "Ubuntu2404"):
        return family
    if family == "AzureLinux":
        if version_at_least(kubernetes_version, AZURE_LINUX_3_FROM):
            return "AzureLinux3"
        return "AzureLinux2"
    return None


def image_definitions(family: str, kubernetes_version: str) -> tuple[ImageDefinition, ...]:
    """The community gallery definitions of a family at a Kubernetes version (none for
    Windows)."""
    name = variant(family, kubernetes_version)
    return VARIANTS[name] if name is not None else ()


def image_id(gallery: str, definition: str, version: str) -> str:
    return f"/CommunityGalleries/{gallery}/images/{definition}/versions/{version}"


def windows_unsupported(family: str) -> str:
    """Why a Windows family gets no images, and what to use instead."""
    return (
        f"imageFamily {family} cannot be launched in provision mode aksscriptless: AKS publishes "
        "Windows node images only to its shared image gallery, not the community galleries, and "
        "the upstream Azure provider launches Windows nodes only with "
        "PROVISION_MODE=aksmachineapi (AKS's Machine API), which karpy does not implement; "
        "use a Linux imageFamily (Ubuntu, Ubuntu2204, Ubuntu2404 or AzureLinux) for this "
        "AKSNodeClass, and an AKS Windows node pool for Windows workloads"
    )
