"""`karpy catalog export --provider aws|azure|kwok`: print the instance-type catalogue a running
configuration sees, in the JSON format `karpy simulate --instance-types FILE` reads.

aws reads the EC2 API as `karpy run` would (region, credentials and `AWS_ENDPOINT_URL` from the
SDK's environment; `VM_MEMORY_OVERHEAD_PERCENT`, `RESERVED_ENIS`, `ISOLATED_VPC` from karpy's):
DescribeInstanceTypes, DescribeInstanceTypeOfferings and DescribeSpotPriceHistory; on-demand
prices from the shipped table (refreshed from the Price List API with `--on-demand-prices`).
Every zone that sells a type is listed; capacity is for an AL2023 node without kubelet
overrides. kwok prints its built-in catalogue.

azure reads Azure Resource Manager as `karpy run` would (`ARM_SUBSCRIPTION_ID`, `ARM_ENDPOINT`,
credentials from the SDK's `DefaultAzureCredential`; the region from `--region`, else
`LOCATION`, else eastus): the region's Resource SKUs, priced from the Retail Prices API
(`AZURE_PRICES_ENDPOINT`), else from the shipped snapshot's prices. Capacity is for the
defaults of an AKSNodeClass (128 GB OS disk, max pods from `NETWORK_PLUGIN` and
`NETWORK_PLUGIN_MODE`). When ARM cannot be reached (or no subscription is set) the shipped
Azure snapshot of the region is printed instead, and stderr says so.
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
    export.add_argument("--provider", choices=("aws", "azure", "kwok"), required=True)
    export.add_argument(
        "--region",
        help="aws: the region (default: AWS_REGION); azure: the location (default: LOCATION, "
        "else eastus)",
    )
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


def _azure_snapshot(region: str, reason: str) -> list[dict[str, object]]:
    from karpy.cloudprovider.azure.catalogfile import dump_azure_catalog
    from karpy.cloudprovider.azure.snapshot import load_snapshot, snapshot_info

    types = load_snapshot(region)
    print(
        f"karpy catalog: {reason}; printing the shipped Azure snapshot of {region} "
        f"(prices as of {snapshot_info()['pricesAsOf']})",
        file=sys.stderr,
    )
    return dump_azure_catalog(types)


async def _azure_arm(region: str, shown: Progress) -> list[dict[str, object]]:
    import aiohttp
    from azure.identity.aio import DefaultAzureCredential
    from azure.mgmt.compute.aio import ComputeManagementClient

    from karpy.cloudprovider.azure.catalog import AzureInstanceTypes
    from karpy.cloudprovider.azure.catalogfile import dump_azure_catalog
    from karpy.cloudprovider.azure.pricing import fetch_prices
    from karpy.cloudprovider.azure.snapshot import DEFAULT_REGION, snapshot_prices
    from karpy.cloudprovider.azure.unavailable import AzureUnavailableOfferings
    from karpy.settings import load_settings

    settings = load_settings({"PROVIDER": "kwok"})
    az = settings.azure
    async with (
        DefaultAzureCredential() as credential,
        # One connection retry: an unreachable ARM falls back to the snapshot without a wait.
        ComputeManagementClient(
            credential, az.subscription_id, base_url=az.arm_endpoint, retry_connect=1
        ) as compute,
    ):
        catalog = AzureInstanceTypes(
            compute=compute,
            location=region,
            unavailable=AzureUnavailableOfferings(),
            prices=snapshot_prices(region) or snapshot_prices(DEFAULT_REGION),
            network_plugin=az.network_plugin,
            network_plugin_mode=az.network_plugin_mode,
            vm_memory_overhead_percent=settings.aws.vm_memory_overhead_percent,
        )
        shown.update("reading retail prices (Retail Prices API)")
        try:
            async with aiohttp.ClientSession() as session:
                prices = await fetch_prices(session, region=region, endpoint=az.prices_endpoint)
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            print(
                f"karpy catalog: Azure retail prices unavailable ({err}); "
                "pricing with the shipped snapshot's",
                file=sys.stderr,
            )
            prices = {}
        if prices:
            catalog.set_prices(prices)
        shown.update("reading resource SKUs (Azure Resource Manager)")
        return dump_azure_catalog(await catalog.for_nodeclass(None))


def _azure(region: str | None) -> list[dict[str, object]]:
    from azure.core.exceptions import AzureError
    from azure.identity import CredentialUnavailableError

    from karpy.cloudprovider.azure.snapshot import DEFAULT_REGION
    from karpy.settings import load_settings

    az = load_settings({"PROVIDER": "kwok"}).azure
    location = (region or az.location or DEFAULT_REGION).lower()
    if not az.subscription_id:
        return _azure_snapshot(location, "ARM_SUBSCRIPTION_ID is not set")
    try:
        with progress("connecting to Azure Resource Manager") as shown:
            return asyncio.run(_azure_arm(location, shown))
    except (AzureError, CredentialUnavailableError, OSError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        return _azure_snapshot(location, f"cannot read Azure Resource Manager ({reason})")


def run(args: argparse.Namespace) -> int:
    if args.provider == "azure":
        from karpy.scheduling.catalog import CatalogError
        from karpy.settings import SettingsError

        try:
            entries = _azure(args.region)
        except (CatalogError, SettingsError) as err:
            print(f"karpy catalog: {err}", file=sys.stderr)
            return INVALID
        json.dump(entries, sys.stdout, indent=1)
        print()
        return OK
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
