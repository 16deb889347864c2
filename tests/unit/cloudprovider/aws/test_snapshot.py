"""The shipped EC2 snapshot reads back with the same capacity, overhead and labels as the live
provider computes."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.v1.labels import LABEL_ARCH, LABEL_TOPOLOGY_REGION
from karpy.cloudprovider.aws.capacity import MIB, CapacitySettings, capacity, overhead
from karpy.cloudprovider.aws.snapshot import (
    load_snapshot,
    parse_instance_types_argument,
    snapshot_index,
    snapshot_regions,
)
from karpy.scheduling import CatalogError
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.resources import CPU, MEMORY, PODS
from tests.unit.cloudprovider.aws.shapes import C6G_XLARGE, M5_LARGE


@pytest.fixture(scope="module")
def us_east_1() -> dict[str, InstanceType]:
    return {t.name: t for t in load_snapshot("us-east-1")}


def test_arguments() -> None:
    assert parse_instance_types_argument("aws") == "us-east-1"
    assert parse_instance_types_argument("aws:us-west-2") == "us-west-2"
    assert parse_instance_types_argument("catalog.json") is None


def test_every_shipped_region_is_indexed_with_its_source_and_date() -> None:
    assert {"us-east-1", "us-west-2"} <= set(snapshot_regions())
    for entry in snapshot_index().values():
        assert entry["source"] and entry["generatedAt"]


def test_unknown_region_names_the_shipped_ones() -> None:
    with pytest.raises(CatalogError, match=r"no snapshot for region 'mars-1'.*us-east-1"):
        load_snapshot("mars-1")


@pytest.mark.parametrize("info", [M5_LARGE, C6G_XLARGE], ids=lambda i: i["InstanceType"])
def test_snapshot_matches_the_live_maths(
    us_east_1: dict[str, InstanceType], info: dict[str, Any]
) -> None:
    t = us_east_1[str(info["InstanceType"])]
    cap = capacity(info, CapacitySettings())
    assert {k: t.capacity[k] for k in (CPU, MEMORY, PODS)} == {
        k: cap[k] for k in (CPU, MEMORY, PODS)
    }
    assert t.allocatable[MEMORY] == cap[MEMORY] - overhead(info, cap, CapacitySettings())[MEMORY]


def test_m5_large_in_the_snapshot(us_east_1: dict[str, InstanceType]) -> None:
    t = us_east_1["m5.large"]
    assert t.allocatable[MEMORY] == 6903 * MIB
    assert t.allocatable[CPU] == 1930
    reqs = t.requirements
    assert reqs[aws.LABEL_INSTANCE_FAMILY].values == {"m5"}
    assert reqs[LABEL_ARCH].values == {"amd64"}
    assert reqs[LABEL_TOPOLOGY_REGION].values == {"us-east-1"}
    assert reqs[aws.LABEL_INSTANCE_GPU_COUNT].values == frozenset()
    assert len(reqs[aws.LABEL_TOPOLOGY_ZONE_ID].values) >= 5
    on_demand = {o.price for o in t.offerings if o.capacity_type == "on-demand"}
    assert on_demand == {0.096}
    assert all(o.available for o in t.offerings)


def test_gpu_and_arm_types_are_there(us_east_1: dict[str, InstanceType]) -> None:
    g4 = us_east_1["g4dn.xlarge"]
    assert g4.capacity["nvidia.com/gpu"] == 1
    assert g4.requirements[aws.LABEL_INSTANCE_GPU_NAME].values == {"t4"}
    assert us_east_1["c6g.xlarge"].requirements[LABEL_ARCH].values == {"arm64"}


def test_types_that_also_run_i386_are_kept(us_east_1: dict[str, InstanceType]) -> None:
    """t2.micro lists i386 and x86_64: amd64, 2 ENIs x (2 - 1) + 2 = 4 pods."""
    t2 = us_east_1["t2.micro"]
    assert t2.requirements[LABEL_ARCH].values == {"amd64"}
    assert t2.capacity[PODS] == 4
