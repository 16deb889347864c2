"""GPU sizes as instance types, as the upstream Azure provider (v1.7.x) makes them: the
`sku-gpu-*` labels and `nvidia.com/gpu` capacity of real GPU SKU records
(`data/southcentralus-gpu-skus.json`), the GPU sizes left out (no drivers AKS can install, or an
image family that does not take them), the driver each size gets, and the scheduler choosing GPU
sizes for a pod asking for a GPU and for a NodePool asking for NVIDIA, also on an exported
catalogue read back (what `karpy simulate --instance-types FILE` plans on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from karpy.apis.azure.v1beta1 import labels
from karpy.cloudprovider.azure.catalogfile import dump_azure_catalog, load_azure_catalog_file
from karpy.cloudprovider.azure.gpu import (
    CUDA_DRIVER_VERSION,
    CUDA_IMAGE_TAG,
    GRID_DRIVER_VERSION,
    GRID_IMAGE_TAG,
    NCV1_CUDA_DRIVER_VERSION,
    driver_for,
    is_nvidia_size,
)
from karpy.cloudprovider.azure.instancetypes import instance_type
from karpy.cloudprovider.azure.skus import Sku, parse_sku
from karpy.scheduling.engine.model import NodePoolTemplate, SchedulingInput
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.pods import pod_view
from karpy.scheduling.requirements import Requirements

REGION = "southcentralus"
RECORDS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "southcentralus-gpu-skus.json").read_text()
)["value"]
# Test prices per hour, not Azure's: the A10 is the cheapest GPU size, the D2as_v6 the cheapest.
PRICE = {
    "Standard_D2as_v6": 0.1,
    "Standard_NV36ads_A10_v5": 3.0,
    "Standard_NC6s_v3": 3.1,
    "Standard_NC16as_T4_v3": 3.2,
    "Standard_NC24ads_A100_v4": 3.7,
    "Standard_ND96asr_v4": 27.0,
    "Standard_ND96isr_MI300X_v5": 1.0,
}
PRICES = {(name, "on-demand"): price for name, price in PRICE.items()}
GPU = "nvidia.com/gpu"


def _sku(name: str) -> Sku:
    (record,) = [r for r in RECORDS if r["name"] == name]
    sku = parse_sku(record, location=REGION)
    assert sku is not None
    return sku


def _type(name: str, **kw: Any) -> InstanceType | None:
    return instance_type(_sku(name), region=REGION, prices=PRICES, pods=110, **kw)


def _types(**kw: Any) -> list[InstanceType]:
    out = [_type(r["name"], **kw) for r in RECORDS]
    return [t for t in out if t is not None]


# (size, GPUs in the record, sku-gpu-name or None when the size name carries none)
NVIDIA = [
    ("Standard_NC6s_v3", 1, None),
    ("Standard_NC16as_T4_v3", 1, "T4"),
    ("Standard_NC24ads_A100_v4", 1, "A100"),
    ("Standard_ND96asr_v4", 8, None),
    ("Standard_NV36ads_A10_v5", 1, "A10"),
]


@pytest.mark.parametrize(("name", "gpus", "gpu_name"), NVIDIA)
def test_nvidia_sizes_carry_gpu_labels_and_capacity(
    name: str, gpus: int, gpu_name: str | None
) -> None:
    assert _sku(name).gpus == gpus
    it = _type(name)
    assert it is not None
    assert it.capacity[GPU] == gpus
    assert it.allocatable[GPU] == gpus  # no GPU is reserved
    found = it.requirements.labels()
    assert found[labels.LABEL_SKU_GPU_COUNT] == str(gpus)
    assert found[labels.LABEL_SKU_GPU_MANUFACTURER] == "nvidia"
    if gpu_name is None:
        assert labels.LABEL_SKU_GPU_NAME not in found
        assert it.requirements[labels.LABEL_SKU_GPU_NAME].operator == "DoesNotExist"
    else:
        assert found[labels.LABEL_SKU_GPU_NAME] == gpu_name


def test_a_size_without_gpus_has_count_zero_and_no_manufacturer() -> None:
    it = _type("Standard_D2as_v6")
    assert it is not None
    assert GPU not in it.capacity
    assert it.requirements.labels()[labels.LABEL_SKU_GPU_COUNT] == "0"
    for key in (labels.LABEL_SKU_GPU_MANUFACTURER, labels.LABEL_SKU_GPU_NAME):
        assert it.requirements[key].operator == "DoesNotExist"
    nvidia = Requirements.from_node_selector_terms(
        [{"key": labels.LABEL_SKU_GPU_MANUFACTURER, "operator": "In", "values": ["nvidia"]}]
    )
    assert it.requirements.intersects(nvidia) is not None


def test_a_gpu_size_aks_installs_no_drivers_on_is_left_out() -> None:
    assert _sku("Standard_ND96isr_MI300X_v5").gpus == 8  # AMD Instinct
    assert _type("Standard_ND96isr_MI300X_v5") is None
    # Drivers managed elsewhere (gpu.mode None): the size is offered, with no NVIDIA GPUs.
    it = _type("Standard_ND96isr_MI300X_v5", install_gpu_drivers=False)
    assert it is not None
    assert GPU not in it.capacity
    assert it.requirements.labels()[labels.LABEL_SKU_GPU_COUNT] == "0"


@pytest.mark.parametrize(
    ("family", "offered"),
    [
        ("Ubuntu", {n for n, _, _ in NVIDIA}),
        ("Ubuntu2204", {n for n, _, _ in NVIDIA}),
        ("Ubuntu2404", {n for n, _, _ in NVIDIA}),
        # Azure Linux takes the drivers of the T4 and V100 sizes only.
        ("AzureLinux", {"Standard_NC6s_v3", "Standard_NC16as_T4_v3"}),
        ("Windows2022", set()),
    ],
)
def test_gpu_sizes_are_offered_only_with_image_families_that_take_their_drivers(
    family: str, offered: set[str]
) -> None:
    names = {t.name for t in _types(image_family=family)}
    assert names - {"Standard_D2as_v6"} == offered
    assert "Standard_D2as_v6" in names
    everything = {t.name for t in _types(image_family=family, install_gpu_drivers=False)}
    assert everything == {r["name"] for r in RECORDS}


@pytest.mark.parametrize(
    ("name", "kind", "version", "tag"),
    [
        ("Standard_NC6s_v3", "cuda", CUDA_DRIVER_VERSION, CUDA_IMAGE_TAG),
        ("Standard_NC24ads_A100_v4", "cuda", CUDA_DRIVER_VERSION, CUDA_IMAGE_TAG),
        ("Standard_ND96asr_v4", "cuda", CUDA_DRIVER_VERSION, CUDA_IMAGE_TAG),
        ("Standard_NV36ads_A10_v5", "grid", GRID_DRIVER_VERSION, GRID_IMAGE_TAG),
        ("Standard_NC16ads_A10_v4", "grid", GRID_DRIVER_VERSION, GRID_IMAGE_TAG),
        ("Standard_NC6", "cuda", NCV1_CUDA_DRIVER_VERSION, CUDA_IMAGE_TAG),  # K80
        ("Standard_NC6_Promo", "cuda", NCV1_CUDA_DRIVER_VERSION, CUDA_IMAGE_TAG),
    ],
)
def test_each_nvidia_size_gets_its_driver(name: str, kind: str, version: str, tag: str) -> None:
    driver = driver_for(name)
    assert driver is not None
    assert (driver.kind, driver.version, driver.image_tag) == (kind, version, tag)
    assert (driver.version, driver.image_tag) == {
        "cuda": (version, "20250328201547"),
        "grid": ("550.144.06", "20250512225043"),
    }[kind]


def test_sizes_without_drivers_get_none() -> None:
    assert driver_for("Standard_D2as_v6") is None
    assert driver_for("Standard_ND96isr_MI300X_v5") is None
    assert is_nvidia_size("standard_nc24ads_a100_v4")  # compared in lower case


# -- the scheduler on these instance types -------------------------------------------------------


def _pod(name: str, *, gpus: int = 0, cpu: str = "1", memory: str = "2Gi") -> Any:
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    if gpus:
        requests[GPU] = str(gpus)
    return pod_view(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]},
        }
    )


def _pool(name: str, requirements: list[dict[str, Any]] | None = None) -> NodePoolTemplate:
    return NodePoolTemplate(
        name=name,
        requirements=Requirements.from_node_selector_terms(
            [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                *(requirements or []),
            ]
        ),
        instance_types=_types(),
    )


def test_a_pod_asking_for_a_gpu_is_planned_onto_the_cheapest_gpu_size() -> None:
    result = schedule(SchedulingInput(pods=[_pod("trainer", gpus=1)], templates=[_pool("all")]))
    assert result.errors == {}
    (claim,) = result.node_claims
    assert {t.name for t in claim.instance_types} <= {n for n, _, _ in NVIDIA}
    assert all(t.capacity.get(GPU, 0) >= 1 for t in claim.instance_types)
    assert claim.requests[GPU] == 1
    assert claim.offering is not None and claim.offering.price == PRICE["Standard_NV36ads_A10_v5"]
    # Without the GPU request the same pod gets the cheapest size, which has none.
    result = schedule(SchedulingInput(pods=[_pod("web")], templates=[_pool("all")]))
    (claim,) = result.node_claims
    assert claim.offering is not None and claim.offering.price == PRICE["Standard_D2as_v6"]
    # Both together share one GPU node: cheaper than a GPU node and a D2as_v6.
    result = schedule(
        SchedulingInput(pods=[_pod("trainer", gpus=1), _pod("web")], templates=[_pool("all")])
    )
    (claim,) = result.node_claims
    assert {p.name for p in claim.pods} == {"trainer", "web"}
    assert claim.offering is not None and claim.offering.price == PRICE["Standard_NV36ads_A10_v5"]


def test_two_gpus_need_a_size_with_two() -> None:
    result = schedule(SchedulingInput(pods=[_pod("big", gpus=2)], templates=[_pool("all")]))
    assert result.errors == {}
    (claim,) = result.node_claims
    assert {t.name for t in claim.instance_types} == {"Standard_ND96asr_v4"}


def test_a_nodepool_asking_for_nvidia_gets_only_nvidia_sizes() -> None:
    nvidia = _pool(
        "gpu",
        [{"key": labels.LABEL_SKU_GPU_MANUFACTURER, "operator": "In", "values": ["nvidia"]}],
    )
    result = schedule(SchedulingInput(pods=[_pod("web")], templates=[nvidia]))
    assert result.errors == {}
    (claim,) = result.node_claims
    assert {t.name for t in claim.instance_types} == {n for n, _, _ in NVIDIA}
    assert claim.offering is not None and claim.offering.price == PRICE["Standard_NV36ads_A10_v5"]


def test_a_nodepool_asking_for_a_gpu_name_gets_that_gpu() -> None:
    a100 = _pool("a100", [{"key": labels.LABEL_SKU_GPU_NAME, "operator": "In", "values": ["A100"]}])
    result = schedule(SchedulingInput(pods=[_pod("web")], templates=[a100]))
    assert result.errors == {}
    (claim,) = result.node_claims
    assert {t.name for t in claim.instance_types} == {"Standard_NC24ads_A100_v4"}


def test_a_gpu_pod_waits_when_its_nodepool_offers_no_gpu() -> None:
    cpu_only = _pool(
        "cpu", [{"key": labels.LABEL_SKU_GPU_COUNT, "operator": "In", "values": ["0"]}]
    )
    result = schedule(SchedulingInput(pods=[_pod("trainer", gpus=1)], templates=[cpu_only]))
    assert result.node_claims == []
    assert "nvidia.com/gpu: 1" in result.errors["default/trainer"]


def test_an_exported_catalogue_keeps_gpus_and_reads_missing_gpu_labels_as_absent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "azure.json"
    path.write_text(json.dumps(dump_azure_catalog(_types())))
    read = {t.name: t for t in load_azure_catalog_file(path)}
    assert read["Standard_ND96asr_v4"].capacity[GPU] == 8
    assert read["Standard_ND96asr_v4"].allocatable[GPU] == 8
    assert GPU not in read["Standard_D2as_v6"].capacity
    plain = read["Standard_D2as_v6"].requirements
    assert plain[labels.LABEL_SKU_GPU_MANUFACTURER].operator == "DoesNotExist"
    assert read["Standard_NC6s_v3"].requirements[labels.LABEL_SKU_GPU_NAME].operator == (
        "DoesNotExist"
    )
    nvidia = NodePoolTemplate(
        name="gpu",
        requirements=Requirements.from_node_selector_terms(
            [{"key": labels.LABEL_SKU_GPU_MANUFACTURER, "operator": "In", "values": ["nvidia"]}]
        ),
        instance_types=list(read.values()),
    )
    result = schedule(SchedulingInput(pods=[_pod("web")], templates=[nvidia]))
    (claim,) = result.node_claims
    assert {t.name for t in claim.instance_types} == {n for n, _, _ in NVIDIA}
