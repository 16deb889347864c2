"""Azure SKUs: kube-reserved, capacity and allocatable as the upstream Azure provider computes
them, for ten real SKU records (`data/westcentralus-skus.json`, from upstream's test data), and
the SKU labels, zones and restrictions read from a record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from karpy.apis.azure.v1beta1 import labels
from karpy.cloudprovider.azure.skus import (
    GIB,
    MIB,
    Sku,
    kube_reserved,
    max_pods,
    node_resources,
    parse_sku,
    parse_sku_name,
    sku_labels,
)

RECORDS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "westcentralus-skus.json").read_text()
)["value"]


def _sku(name: str) -> Sku:
    (record,) = [r for r in RECORDS if r["name"] == name]
    sku = parse_sku(record, location="westcentralus")
    assert sku is not None
    return sku


# Upstream's own figures (pkg/providers/instancetype/kube_reserved_test.go).
@pytest.mark.parametrize(
    ("vcpus", "memory_gib", "cpu_milli", "memory_mib"),
    [(4, 7.0, 140, 1638), (2, 8.0, 100, 1843), (3, 64.0, 120, 5611)],
)
def test_kube_reserved_matches_upstreams_figures(
    vcpus: int, memory_gib: float, cpu_milli: int, memory_mib: int
) -> None:
    assert kube_reserved(vcpus, memory_gib) == (cpu_milli, memory_mib * MIB)


# (SKU, vCPUs, MemoryGB from the record, kube-reserved CPU m, kube-reserved memory Mi), the
# reservations worked by hand from AKS's brackets (memory 25% of the first 4 GiB, 20% of the
# next 4, 10% of the next 8, 6% up to 128, 2% above; CPU 6%, 4%, 2% of cores 1, 2, 3-4, 1% above).
TEN_SKUS = [
    ("Standard_A0", 1, 0.75, 60, 192),
    ("Standard_B1s", 1, 1.0, 60, 256),
    ("Standard_D2s_v3", 2, 8.0, 100, 1843),
    ("Standard_D2_v2", 2, 7.0, 100, 1638),
    ("Standard_D2_v3", 2, 8.0, 100, 1843),
    ("Standard_D2_v5", 2, 8.0, 100, 1843),
    ("Standard_D4s_v3", 4, 16.0, 140, 2662),
    ("Standard_D64s_v3", 64, 256.0, 740, 12165),
    ("Standard_DS2_v2", 2, 7.0, 100, 1638),
    ("Standard_F16s_v2", 16, 32.0, 260, 3645),
]


@pytest.mark.parametrize(("name", "vcpus", "memory_gib", "cpu_milli", "memory_mib"), TEN_SKUS)
def test_ten_skus_allocatable(
    name: str, vcpus: int, memory_gib: float, cpu_milli: int, memory_mib: int
) -> None:
    sku = _sku(name)
    assert (sku.vcpus, sku.memory_gib) == (vcpus, memory_gib)
    node = node_resources(sku, vm_memory_overhead_percent=0.075, os_disk_size_gb=128, pods=30)
    assert node.kube_reserved_cpu_milli == cpu_milli
    assert node.kube_reserved_memory == memory_mib * MIB
    assert node.allocatable_cpu_milli == vcpus * 1000 - cpu_milli
    # Capacity: whole GiB (A0's 0.75 truncates to 0, as upstream's does) less 7.5%, rounded up.
    whole = int(memory_gib) * GIB
    overhead = -(-whole * 75 // 1000)
    assert node.memory == whole - overhead
    assert node.allocatable_memory == whole - overhead - memory_mib * MIB - 750 * MIB
    assert node.ephemeral_storage == 128_000_000_000
    assert node.pods == 30


def test_d2s_v3_allocatable_in_figures() -> None:
    node = node_resources(_sku("Standard_D2s_v3"))
    assert node.memory == 7_945_689_497  # 8 GiB - ceil(7.5%)
    assert node.allocatable_memory == 5_226_731_929  # less 1843Mi reserved and 750Mi eviction
    assert node.allocatable_cpu_milli == 1900


@pytest.mark.parametrize(
    ("plugin", "mode", "override", "pods"),
    [
        ("azure", "overlay", None, 250),
        ("azure", "", None, 30),
        ("none", "", None, 250),
        ("kubenet", "", None, 110),
        ("azure", "overlay", 50, 50),
    ],
)
def test_max_pods_follow_the_network_plugin(
    plugin: str, mode: str, override: int | None, pods: int
) -> None:
    assert max_pods(network_plugin=plugin, network_plugin_mode=mode, override=override) == pods


@pytest.mark.parametrize(
    ("name", "family", "series", "version"),
    [
        ("Standard_D2s_v3", "D", "Ds_v3", "3"),
        ("Standard_D2_v2", "D", "D_v2", "2"),
        ("Standard_F16s_v2", "F", "Fs_v2", "2"),
        ("Standard_B1s", "B", "Bs", "1"),
        ("Standard_D4pls_v6", "D", "Dpls_v6", "6"),
        ("Standard_NC24ads_A100_v4", "N", "NCads_A100_v4", "4"),
    ],
)
def test_sku_name_parts(name: str, family: str, series: str, version: str) -> None:
    parts = parse_sku_name(name)
    assert parts is not None
    assert (parts.family, parts.series, parts.version) == (family, series, version)


def test_labels_of_a_record() -> None:
    got = sku_labels(_sku("Standard_D4s_v3"))
    assert got[labels.LABEL_SKU_NAME] == "Standard_D4s_v3"
    assert got[labels.LABEL_SKU_CPU] == "4"
    assert got[labels.LABEL_SKU_MEMORY] == "16384"
    assert got[labels.LABEL_SKU_FAMILY] == "D"
    assert got[labels.LABEL_SKU_SERIES] == "Ds_v3"
    assert got[labels.LABEL_SKU_VERSION] == "3"
    assert got[labels.LABEL_SKU_ACCELERATED_NETWORKING] == "true"
    assert got[labels.LABEL_SKU_STORAGE_PREMIUM_CAPABLE] == "true"
    assert sku_labels(_sku("Standard_D2_v3"))[labels.LABEL_SKU_STORAGE_PREMIUM_CAPABLE] == "false"


def test_zone_and_location_restrictions() -> None:
    record = dict(RECORDS[2])
    record["locationInfo"] = [{"location": "westcentralus", "zones": ["3", "1", "2"]}]
    record["restrictions"] = [
        {
            "type": "Zone",
            "values": ["westcentralus"],
            "restrictionInfo": {"locations": ["westcentralus"], "zones": ["2"]},
            "reasonCode": "NotAvailableForSubscription",
        }
    ]
    sku = parse_sku(record, location="WestCentralUS")
    assert sku is not None
    assert sku.zones == ("1", "2", "3")
    assert sku.available_zones == ("1", "3")
    assert not sku.restricted_in_location
    record["restrictions"] = [
        {
            "type": "Location",
            "values": ["westcentralus"],
            "restrictionInfo": {"locations": ["westcentralus"]},
        }
    ]
    restricted = parse_sku(record, location="westcentralus")
    assert restricted is not None and restricted.restricted_in_location


def test_other_resource_types_are_skipped() -> None:
    assert parse_sku({"name": "Premium_LRS", "resourceType": "disks"}, location="x") is None
