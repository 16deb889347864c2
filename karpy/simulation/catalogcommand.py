"""`karpy catalog export --provider aws|kwok`: print the instance-type catalogue a running
configuration sees, in the JSON format `karpy simulate --instance-types FILE` reads.

aws reads the EC2 API as `karpy run` would (region, credentials and `AWS_ENDPOINT_URL` from the
SDK's environment; `VM_MEMORY_OVERHEAD_PERCENT`, `RESERVED_ENIS`, `ISOLATED_VPC` from karpy's):
DescribeInstanceTypes, DescribeInstanceTypeOfferings and DescribeSpotPriceHistory; on-demand
prices from the shipped table (refreshed from the Price List API with `--on-demand-prices`).
Every zone that sells a type is listed; capacity is for an AL2023 node without kubelet
overrides. kwok prints its built-in catalogue.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from karpy.exitcodes import FAILURE, INVALID, OK
from karpy.progress import Progress, progress

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = sub.add_parser("export", help="print the catalogue as JSON")
    export.add_argument("--provider", choices=("aws", "kwok"), required=True)
    export.add_argument("--region", help="aws: the region (default: AWS_REGION)")
    export.add_argument(
        "--on-demand-prices",
        action="store_true",
        help="aws: refresh on-demand prices from the Price List API first",
    )


async def _aws(region: str | None, on_demand: bool, shown: Progress) -> list[dict[str, object]]:
    from karpy.cloudprovider.aws.clients import AWSClients
    from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
    from karpy.cloudprovider.aws.labels import instance_type_labels
    from karpy.cloudprovider.aws.plugin import region_of
    from karpy.cloudprovider.aws.pricing import PricingProvider
    from karpy.cloudprovider.aws.snapshot import dump_snapshot
    from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
    from karpy.settings import load_settings

    # Only the AWS capacity settings matter here; CLUSTER_NAME (required to run) does not.
    settings = load_settings({"PROVIDER": "kwok"}).aws
    clients = AWSClients(
        region or region_of(os.environ), endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None
    )
    try:
        pricing = PricingProvider(clients, isolated_vpc=settings.isolated_vpc)
        if on_demand:
            shown.update("reading on-demand prices (Price List API)")
            await pricing.update_on_demand_prices()
        shown.update("reading instance types, offerings and spot prices (EC2 API)")
        provider = InstanceTypeProvider(
            clients,
            pricing,
            UnavailableOfferings(),
            vm_memory_overhead_percent=settings.vm_memory_overhead_percent,
            reserved_enis=settings.reserved_enis,
        )
        await provider.refresh(force=True)
        labels = {name: instance_type_labels(info) for name, info in provider.infos.items()}
        return dump_snapshot(await provider.list(), labels)
    finally:
        await clients.close()


def run(args: argparse.Namespace) -> int:
    if args.provider == "kwok":
        from karpy.cloudprovider.kwok.catalog import kwok_catalog_json

        print(kwok_catalog_json())
        return OK
    from karpy.cloudprovider.aws.errors import BotoCoreError, ClientError
    from karpy.cloudprovider.registry import ProviderUnavailableError
    from karpy.settings import SettingsError

    try:
        with progress("connecting to AWS") as shown:
            entries = asyncio.run(_aws(args.region, args.on_demand_prices, shown))
    except (ProviderUnavailableError, SettingsError) as err:
        print(f"karpy catalog: {err}", file=sys.stderr)
        return INVALID
    except (BotoCoreError, ClientError, OSError) as err:
        print(f"karpy catalog: cannot read the catalogue from AWS: {err}", file=sys.stderr)
        return FAILURE
    json.dump(entries, sys.stdout, indent=1)
    print()
    return OK
