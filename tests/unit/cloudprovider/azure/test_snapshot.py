"""The shipped Azure snapshot: its regions, SKUs and prices, what it says about itself, and that
it is exactly what `hack/azure/snapshot.py` writes from the checked-in retail price items."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from karpy.cloudprovider.azure.snapshot import (
    load_snapshot,
    parse_instance_types_argument,
    snapshot_info,
    snapshot_prices,
    snapshot_regions,
)
from karpy.scheduling.catalog import CatalogError

ROOT = Path(__file__).resolve().parents[4]
SHIPPED = ROOT / "karpy/cloudprovider/azure/data/snapshot.json"


def test_the_shipped_file_is_what_the_hack_script_writes(tmp_path: Path) -> None:
    out = tmp_path / "snapshot.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack/azure/snapshot.py"),
            "--items",
            str(ROOT / "hack/azure/retail-prices-2023-12-18.json"),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert json.loads(out.read_text()) == json.loads(SHIPPED.read_text())


def test_the_header_says_where_prices_come_from_and_that_they_are_refreshed() -> None:
    about = json.loads(SHIPPED.read_text())["_about"]
    assert "every 12 hours" in about
    info = snapshot_info()
    assert info["pricesAsOf"] == "2023-12-18"
    assert "Retail Prices API" in info["pricesFrom"]
    assert "zz_generated.pricing.go" in info["pricesFrom"]


def test_regions_and_prices() -> None:
    assert snapshot_regions() == ["eastus", "westus", "westus2"]
    eastus = snapshot_prices("eastus")
    assert eastus[("Standard_D2s_v5", "on-demand")] == 0.096
    assert eastus[("Standard_D2s_v5", "spot")] == 0.096  # no spot price: on-demand stands in
    assert snapshot_prices("westus")[("Standard_D2s_v5", "on-demand")] == 0.112
    assert snapshot_prices("antarctica") == {}


def test_instance_types_of_a_zonal_and_a_regional_region() -> None:
    eastus = {t.name: t for t in load_snapshot("eastus")}
    assert len(eastus) == 47
    d2 = eastus["Standard_D2s_v5"]
    assert d2.allocatable["cpu"] == 1900
    assert d2.allocatable["pods"] == 250
    assert sorted({o.zone for o in d2.offerings}) == ["eastus-1", "eastus-2", "eastus-3"]
    assert {o.capacity_type for o in d2.offerings} == {"on-demand", "spot"}
    assert {o.capacity_type for o in eastus["Standard_B2s"].offerings} == {"on-demand"}
    assert eastus["Standard_D2ps_v5"].requirements.labels()["kubernetes.io/arch"] == "arm64"
    westus = {t.name: t for t in load_snapshot("westus", network_plugin="kubenet")}
    assert {o.zone for o in westus["Standard_D2s_v5"].offerings} == {""}
    assert westus["Standard_D2s_v5"].allocatable["pods"] == 110


def test_instance_types_argument() -> None:
    assert parse_instance_types_argument("azure") == "eastus"
    assert parse_instance_types_argument("azure:WestUS2") == "westus2"
    assert parse_instance_types_argument("aws:us-east-1") is None
    with pytest.raises(CatalogError, match="shipped: eastus, westus, westus2"):
        load_snapshot("northeurope")
