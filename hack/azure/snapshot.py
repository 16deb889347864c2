"""Regenerate the Azure snapshot (`karpy/cloudprovider/azure/data/snapshot.json`): Resource SKU
records of common VM sizes and their retail prices in a few regions, for `karpy simulate
--instance-types azure[:REGION]` and for `PROVIDER=azure` until the Retail Prices API answers.

    .venv/bin/python hack/azure/snapshot.py --items hack/azure/retail-prices-2023-12-18.json
    .venv/bin/python hack/azure/snapshot.py --api https://prices.azure.com   # needs network

Prices are read from retail price items, the Retail Prices API's own format (`Items` of
`GET /api/retail/prices`), either from a file (`--items`) or from the API itself (`--api`, one
query per region), and parsed by the provider's own parser (`karpy.cloudprovider.azure.pricing`):
Linux pay-as-you-go, spot where a `... Spot` meter exists. The SKU records are written from the
size table below (vCPUs and memory as Azure's VM size documentation lists them; capabilities
named as the Resource SKUs API names them); only sizes priced in a region are offered there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from karpy.cloudprovider.azure.pricing import fetch_prices, parse_prices

DATA = Path(__file__).resolve().parents[2] / "karpy/cloudprovider/azure/data/snapshot.json"

# Availability zones of each shipped region (West US has none: its SKUs are regional).
REGIONS: dict[str, tuple[str, ...]] = {
    "eastus": ("1", "2", "3"),
    "westus": (),
    "westus2": ("1", "2", "3"),
}

# (family as the Resource SKUs API names it, arch, spot capable, accelerated networking,
#  [(size, vCPUs, memory GiB)])
SERIES: list[tuple[str, str, bool, bool, list[tuple[str, int, int]]]] = [
    ("standardBSFamily", "x64", False, False,
     [("B2s", 2, 4), ("B2ms", 2, 8), ("B4ms", 4, 16), ("B8ms", 8, 32)]),
    ("standardDSv3Family", "x64", True, True,
     [("D2s_v3", 2, 8), ("D4s_v3", 4, 16), ("D8s_v3", 8, 32), ("D16s_v3", 16, 64),
      ("D32s_v3", 32, 128), ("D64s_v3", 64, 256)]),
    ("standardDSv5Family", "x64", True, True,
     [("D2s_v5", 2, 8), ("D4s_v5", 4, 16), ("D8s_v5", 8, 32), ("D16s_v5", 16, 64),
      ("D32s_v5", 32, 128), ("D48s_v5", 48, 192), ("D64s_v5", 64, 256),
      ("D96s_v5", 96, 384)]),
    ("standardDDSv5Family", "x64", True, True,
     [("D2ds_v5", 2, 8), ("D4ds_v5", 4, 16), ("D8ds_v5", 8, 32), ("D16ds_v5", 16, 64)]),
    ("standardDPSv5Family", "Arm64", True, True,
     [("D2ps_v5", 2, 8), ("D4ps_v5", 4, 16), ("D8ps_v5", 8, 32), ("D16ps_v5", 16, 64),
      ("D32ps_v5", 32, 128)]),
    ("standardESv3Family", "x64", True, True,
     [("E2s_v3", 2, 16), ("E4s_v3", 4, 32), ("E8s_v3", 8, 64), ("E16s_v3", 16, 128),
      ("E32s_v3", 32, 256)]),
    ("standardESv5Family", "x64", True, True,
     [("E2s_v5", 2, 16), ("E4s_v5", 4, 32), ("E8s_v5", 8, 64), ("E16s_v5", 16, 128),
      ("E32s_v5", 32, 256), ("E48s_v5", 48, 384), ("E64s_v5", 64, 512)]),
    ("standardFSv2Family", "x64", True, True,
     [("F2s_v2", 2, 4), ("F4s_v2", 4, 8), ("F8s_v2", 8, 16), ("F16s_v2", 16, 32),
      ("F32s_v2", 32, 64), ("F48s_v2", 48, 96), ("F64s_v2", 64, 128), ("F72s_v2", 72, 144)]),
]  # fmt: skip


def sku_records(priced: dict[str, set[str]]) -> list[dict[str, Any]]:
    """Resource SKU records (ARM JSON) of the table's sizes, located in the regions that price
    them."""
    out: list[dict[str, Any]] = []
    for family, arch, spot, accelerated, sizes in SERIES:
        for size, vcpus, memory in sizes:
            name = f"Standard_{size}"
            regions = sorted(r for r, names in priced.items() if name in names)
            if not regions:
                continue
            capabilities = {
                "vCPUs": str(vcpus),
                "MemoryGB": str(memory),
                "HyperVGenerations": "V2" if arch == "Arm64" else "V1,V2",
                "CpuArchitectureType": arch,
                "PremiumIO": "True",
                "AcceleratedNetworkingEnabled": str(accelerated),
                "LowPriorityCapable": str(spot),
            }
            out.append(
                {
                    "name": name,
                    "tier": "Standard",
                    "size": size,
                    "family": family,
                    "resourceType": "virtualMachines",
                    "locations": regions,
                    "locationInfo": [{"location": r, "zones": list(REGIONS[r])} for r in regions],
                    "restrictions": [],
                    "capabilities": [{"name": k, "value": v} for k, v in capabilities.items()],
                }
            )
    return out


async def _from_api(endpoint: str) -> dict[str, dict[tuple[str, str], float]]:
    async with aiohttp.ClientSession() as session:
        return {r: await fetch_prices(session, region=r, endpoint=endpoint) for r in REGIONS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--items", type=Path, help="retail price items (JSON with `Items`)")
    source.add_argument("--api", help="Retail Prices API endpoint, e.g. https://prices.azure.com")
    parser.add_argument("-o", "--output", type=Path, default=DATA)
    args = parser.parse_args(argv)

    if args.items is not None:
        doc = json.loads(args.items.read_text())
        items = doc["Items"]
        tables = {r: parse_prices(i for i in items if i.get("armRegionName") == r) for r in REGIONS}
        origin = doc.get("_source") or str(args.items)
        as_of = doc.get("asOf") or ""
    else:
        tables = asyncio.run(_from_api(args.api))
        origin = f"the Azure Retail Prices API at {args.api}"
        as_of = datetime.now(UTC).date().isoformat()
    sizes = {f"Standard_{s}" for *_, group in SERIES for s, _, _ in group}
    prices = {
        region: {
            f"{sku}|{capacity_type}": price
            for (sku, capacity_type), price in sorted(table.items())
            if sku in sizes
        }
        for region, table in tables.items()
    }
    priced = {r: {key.split("|")[0] for key in p} for r, p in prices.items()}
    snapshot = {
        "_about": (
            "Azure VM sizes and retail prices shipped with karpy, written by hack/azure/"
            "snapshot.py. karpy simulate --instance-types azure[:REGION] plans with them; "
            "PROVIDER=azure starts from these prices and replaces them with the Retail Prices "
            "API's every 12 hours (and keeps them while the API cannot be reached). Spot "
            "offerings without a spot price here carry the on-demand price."
        ),
        "pricesFrom": origin,
        "pricesAsOf": as_of,
        "skusFrom": (
            "the size table in hack/azure/snapshot.py (vCPUs and memory as Azure's VM size "
            "documentation lists them)"
        ),
        "regions": {r: {"zones": list(z)} for r, z in REGIONS.items()},
        "prices": prices,
        "skus": sku_records(priced),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(snapshot, indent=1, sort_keys=False) + "\n")
    counts = {r: len(p) for r, p in prices.items()}
    print(f"wrote {args.output}: {len(snapshot['skus'])} SKUs, prices {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
