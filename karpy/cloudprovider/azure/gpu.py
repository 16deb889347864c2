"""GPU VM sizes as the upstream Azure provider (v1.7.x) treats them: which sizes get NVIDIA drivers
installed, on which image families, with which driver, and which GPU sizes are left out.

A size "has GPUs" when its Resource SKU record says so (the `GPUs` capability). Whether karpy may
use it is not the record's say but a hand-kept table, as upstream's (`pkg/utils/gpu.go` and its
`supported-gpus.yaml`, itself following AKS's node bootstrapping in AgentBaker): the sizes whose
NVIDIA drivers AKS installs on Ubuntu, and the smaller set it installs them on for Azure Linux. A
size with GPUs outside the table (an AMD NVv4, a new NVIDIA series) cannot get drivers and is not
offered at all, and a size in the table is offered only with an image family it supports.

The table is the NVIDIA rows of upstream's list without the sizes it gained in 2026 (the RTX PRO
6000 Blackwell sizes; AMD support came then too), its Azure Linux column the sizes v1.7's
`marinerNvidiaEnabledSKUs` held. Sizes are compared in lower case and without the `_Promo`
suffix, as upstream compares them.

Drivers (the `aks-gpu` image the node's provisioning scripts pull, by driver version and image
tag): the "converged" GRID driver for the A10 sizes (NVadsA10 v5, NCadsA10 v4), which fail to
install CUDA drivers; the R470 CUDA driver for the original NC (K80) sizes; the CUDA driver for
every other size. Fabric manager is left off, as upstream's aksscriptless mode leaves it: it
never sets `GPU_NEEDS_FABRIC_MANAGER`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from karpy.apis.azure.v1beta1 import labels as azure

__all__ = [
    "CUDA_DRIVER_VERSION",
    "CUDA_IMAGE_TAG",
    "GRID_DRIVER_VERSION",
    "GRID_IMAGE_TAG",
    "NCV1_CUDA_DRIVER_VERSION",
    "NVIDIA_GPU_RESOURCE",
    "GpuDriver",
    "driver_for",
    "is_azure_linux_gpu_size",
    "is_nvidia_size",
    "supported_on_image_family",
]

NVIDIA_GPU_RESOURCE: Final = "nvidia.com/gpu"
"""The extended resource the NVIDIA device plugin advertises, one per GPU."""

# Driver versions and `aks-gpu` image tags of upstream v1.7.x (AgentBaker's components of
# spring 2025).
CUDA_DRIVER_VERSION: Final = "550.144.03"
CUDA_IMAGE_TAG: Final = "20250328201547"
GRID_DRIVER_VERSION: Final = "550.144.06"
GRID_IMAGE_TAG: Final = "20250512225043"
NCV1_CUDA_DRIVER_VERSION: Final = "470.82.01"
"""The last driver the K80 cards of the original NC sizes take."""

DRIVER_CUDA: Final = "cuda"
DRIVER_GRID: Final = "grid"


def _sizes(*names: str) -> frozenset[str]:
    return frozenset(f"standard_{n}" for n in names)


# Sizes whose drivers AKS installs on Azure Linux (T4, NCv3 V100, NDv2, NDv3).
_AZURE_LINUX: Final = _sizes(
    "nc4as_t4_v3",
    "nc8as_t4_v3",
    "nc16as_t4_v3",
    "nc64as_t4_v3",
    "nc6s_v3",
    "nc12s_v3",
    "nc24s_v3",
    "nc24rs_v3",
    "nd40rs_v2",
    "nd40s_v3",
)

# Sizes whose drivers AKS installs on Ubuntu, by series.
_NVIDIA: Final = _AZURE_LINUX | _sizes(
    # NC (K80), NCv2 (P100)
    "nc6",
    "nc12",
    "nc24",
    "nc24r",
    "nc6s_v2",
    "nc12s_v2",
    "nc24s_v2",
    "nc24rs_v2",
    # ND (P40)
    "nd6s",
    "nd12s",
    "nd24s",
    "nd24rs",
    # NV (M60), NVv3
    "nv6",
    "nv12",
    "nv24",
    "nv24r",
    "nv12s_v3",
    "nv24s_v3",
    "nv48s_v3",
    # NCads A10 v4, NVads A10 v5 (GRID)
    "nc8ads_a10_v4",
    "nc16ads_a10_v4",
    "nc32ads_a10_v4",
    "nv6ads_a10_v5",
    "nv12ads_a10_v5",
    "nv18ads_a10_v5",
    "nv36ads_a10_v5",
    "nv36adms_a10_v5",
    "nv72ads_a10_v5",
    # NC A100 v4, ND A100 v4, NDm A100 v4
    "nc24ads_a100_v4",
    "nc48ads_a100_v4",
    "nc96ads_a100_v4",
    "nd96asr_v4",
    "nd112asr_a100_v4",
    "nd120asr_a100_v4",
    "nd96amsr_a100_v4",
    "nd112amsr_a100_v4",
    "nd120amsr_a100_v4",
    "nd96ams_v4",
    "nd96ams_a100_v4",
    "nd96ams_a100_flex_v4",
    "nd96amsf_a100_v4",
    "nd96amsrf_a100_v4",
    # NCads H100 v5, ND H100 v5, ND H200 v5
    "nc40ads_h100_v5",
    "nc80adis_h100_v5",
    "nd96isr_h100_v5",
    "nd96is_h100_v5",
    "nd96is_noib_h100_v5",
    "nd96is_flex_h100_v5",
    "nd96isf_h100_v5",
    "nd96isrf_h100_v5",
    "nd96isr_h200_v5",
    "nd96is_h200_v5",
    "nd96isf_h200_v5",
    "nd96isrf_h200_v5",
    # ND GB200 v6, ND GB300 v6
    "nd128isr_ndr_gb200_v6",
    "nd128isr_gb300_v6",
)

# Sizes that take the converged (GRID) driver: CUDA drivers fail to install on them.
_GRID: Final = _sizes(
    "nv6ads_a10_v5",
    "nv12ads_a10_v5",
    "nv18ads_a10_v5",
    "nv36ads_a10_v5",
    "nv72ads_a10_v5",
    "nv36adms_a10_v5",
    "nc8ads_a10_v4",
    "nc16ads_a10_v4",
    "nc32ads_a10_v4",
)

_UBUNTU_FAMILIES: Final = frozenset({"Ubuntu", "Ubuntu2204", "Ubuntu2404"})
_AZURE_LINUX_FAMILY: Final = "AzureLinux"


def _normal(size: str) -> str:
    return size.lower().removesuffix("_promo")


def is_nvidia_size(size: str) -> bool:
    """Whether AKS installs NVIDIA drivers on the size (on Ubuntu)."""
    return _normal(size) in _NVIDIA


def is_azure_linux_gpu_size(size: str) -> bool:
    """Whether AKS installs NVIDIA drivers on the size on Azure Linux."""
    return _normal(size) in _AZURE_LINUX


def supported_on_image_family(size: str, image_family: str) -> bool:
    """Whether a size can boot with drivers from the family's images: any size without drivers
    to install does; a driver size only with Ubuntu (the table) or Azure Linux (its subset)."""
    if not (is_nvidia_size(size) or is_azure_linux_gpu_size(size)):
        return True
    if image_family in _UBUNTU_FAMILIES:
        return is_nvidia_size(size)
    if image_family == _AZURE_LINUX_FAMILY:
        return is_azure_linux_gpu_size(size)
    return False


@dataclass(frozen=True, slots=True)
class GpuDriver:
    """The NVIDIA driver a node's provisioning scripts install (`GPU_DRIVER_*`, `GPU_IMAGE_SHA`)."""

    kind: str
    """`cuda` or `grid`: which `aks-gpu` image."""
    version: str
    image_tag: str
    manufacturer: str = azure.MANUFACTURER_NVIDIA


def _is_ncv1(size: str) -> bool:
    low = size.lower()
    return low.startswith("standard_nc") and "_v" not in low


def driver_for(size: str) -> GpuDriver | None:
    """The driver of a size AKS installs drivers on, else None."""
    if not is_nvidia_size(size):
        return None
    low = size.lower()
    if low in _GRID:
        return GpuDriver(kind=DRIVER_GRID, version=GRID_DRIVER_VERSION, image_tag=GRID_IMAGE_TAG)
    version = NCV1_CUDA_DRIVER_VERSION if _is_ncv1(size) else CUDA_DRIVER_VERSION
    return GpuDriver(kind=DRIVER_CUDA, version=version, image_tag=CUDA_IMAGE_TAG)
