"""`karpy catalog export --provider azure` as a process against the fake ARM (HTTPS, the SDK's
own credential and clients): the region's Resource SKUs with the settings' max pods, priced by
the Retail Prices API, in the format `karpy simulate --instance-types FILE` reads back for an
AKSNodeClass with the AKS overhead; the shipped snapshot when ARM cannot be reached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from karpy.cloudprovider.azure.snapshot import load_snapshot
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from karpy.simulation.catalogchoice import choose_catalog
from tests.integration.azure.cluster import SUBSCRIPTION
from tests.integration.azure.fakearm import ThreadedFakeArm

REPO = Path(__file__).resolve().parents[3]
REGION = "westus2"
SIZES = {"Standard_D2s_v3", "Standard_D4s_v3", "Standard_E2s_v5"}


def _seed(arm: ThreadedFakeArm) -> None:
    snapshot = json.loads((REPO / "karpy/cloudprovider/azure/data/snapshot.json").read_text())
    arm.state.skus[REGION] = [s for s in snapshot["skus"] if s["name"] in SIZES]
    # Prices only the API has (the snapshot's differ): the export must carry these.
    arm.state.prices = [
        {"armSkuName": name, "armRegionName": REGION, "retailPrice": price, "skuName": sku}
        for name, price, sku in (
            ("Standard_D2s_v3", 0.111, "D2s v3"),
            ("Standard_D4s_v3", 0.222, "D4s v3"),
            ("Standard_E2s_v5", 0.333, "E2s v5"),
            ("Standard_D2s_v3", 0.011, "D2s v3 Spot"),
        )
    ]


def _export(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ARM_", "AZURE_"))}
    full.pop("LOCATION", None)
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "karpy.cli", "catalog", "export", "--provider", "azure", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
        check=False,
    )


def _arm_env(arm: ThreadedFakeArm) -> dict[str, str]:
    return {
        "ARM_SUBSCRIPTION_ID": SUBSCRIPTION,
        "ARM_ENDPOINT": arm.url,
        "AZURE_PRICES_ENDPOINT": arm.url,
        "IDENTITY_ENDPOINT": f"{arm.url}/msi/token",
        "IDENTITY_HEADER": "export",
        "SSL_CERT_FILE": str(arm.cert_path),
    }


def _offers(entry: dict[str, Any], capacity_type: str) -> list[float]:
    return [
        o["Price"]
        for o in entry["offerings"]
        if {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity_type]}
        in o["Requirements"]
    ]


def test_export_reads_arm_and_prices_and_simulate_reads_it_back(tmp_path: Path) -> None:
    with ThreadedFakeArm() as arm:
        _seed(arm)
        done = _export(
            {**_arm_env(arm), "LOCATION": REGION, "NETWORK_PLUGIN": "kubenet"},
        )
        assert done.returncode == 0, done.stderr
        assert arm.state.calls[("GET", "skus")] >= 1
    entries = {e["name"]: e for e in json.loads(done.stdout)}
    assert set(entries) == SIZES
    d2 = entries["Standard_D2s_v3"]
    assert d2["resources"]["pods"] == "110"  # kubenet
    assert d2["labels"]["karpenter.azure.com/sku-family"] == "D"
    assert d2["labels"]["karpenter.azure.com/sku-memory"] == "8192"
    assert set(_offers(d2, "on-demand")) == {0.111}
    assert set(_offers(d2, "spot")) == {0.011}
    assert "shipped" not in done.stderr

    path = tmp_path / "azure.json"
    path.write_text(done.stdout)
    types = {t.name: t for t in choose_catalog(str(path), {"AKSNodeClass": "NodePool 'x'"})}
    read = types["Standard_D2s_v3"]
    # the same figures as the live provider's (docs: 1900m and 5,226,731,929 bytes)
    assert read.allocatable[CPU] == 1900
    assert read.allocatable[MEMORY] == 5_226_731_929
    assert read.capacity[PODS] == 110
    assert read.capacity[EPHEMERAL_STORAGE] == 128 * 10**9
    assert read.requirements["karpenter.azure.com/sku-family"].values == {"D"}
    # and a scenario without NodeClasses takes it as Azure's too
    assert {t.name for t in choose_catalog(str(path), {})} == SIZES


def test_without_arm_the_shipped_snapshot_is_exported() -> None:
    with ThreadedFakeArm() as arm:
        env = {**_arm_env(arm), "ARM_ENDPOINT": "https://127.0.0.1:9"}
        done = _export(env, "--region", "westus")
    assert done.returncode == 0, done.stderr
    assert "cannot read Azure Resource Manager" in done.stderr
    assert "shipped Azure snapshot of westus" in done.stderr
    names = [e["name"] for e in json.loads(done.stdout)]
    assert names == sorted(t.name for t in load_snapshot("westus"))


def test_without_a_subscription_the_snapshot_is_exported_and_a_bad_region_is_refused() -> None:
    done = _export({"LOCATION": "eastus"})
    assert done.returncode == 0, done.stderr
    assert "ARM_SUBSCRIPTION_ID is not set" in done.stderr
    assert len(json.loads(done.stdout)) == len(load_snapshot("eastus"))
    bad = _export({}, "--region", "mars")
    assert bad.returncode == 2
    assert "no Azure snapshot for region 'mars'" in bad.stderr
