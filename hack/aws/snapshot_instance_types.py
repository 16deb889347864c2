"""Regenerate the EC2 instance-type snapshot `karpy simulate --instance-types aws` plans with.

    .venv/bin/python hack/aws/snapshot_instance_types.py [--region us-east-1]
        [--endpoint-url URL | --moto] [-o FILE] [--source TEXT]

Reads `DescribeInstanceTypes`, `DescribeInstanceTypeOfferings` and `DescribeAvailabilityZones`
from the EC2 API (default credentials), from `--endpoint-url`, or from a moto server started
in-process with `--moto` (moto ships real DescribeInstanceTypes data and per-region offerings).
Prices come from karpy's shipped on-demand table; spot offerings carry the on-demand price.
Writes `karpy/cloudprovider/aws/data/instance-types-<region>.json.gz` and records the region's
source and date in `data/snapshots.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.labels import instance_type_labels
from karpy.cloudprovider.aws.pricing import PricingProvider, static_prices_date
from karpy.cloudprovider.aws.snapshot import dump_snapshot, snapshot_file_name
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings

DATA = Path(__file__).resolve().parents[2] / "karpy/cloudprovider/aws/data"


@contextmanager
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


async def snapshot(region: str, endpoint_url: str | None) -> list[dict[str, object]]:
    clients = AWSClients(region, endpoint_url=endpoint_url)
    provider = InstanceTypeProvider(clients, PricingProvider(clients), UnavailableOfferings())
    await provider.refresh(force=True, spot_prices=False)
    types = await provider.list()
    labels = {name: instance_type_labels(info) for name, info in provider.infos.items()}
    return dump_snapshot(types, labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--region", default="us-east-1")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--endpoint-url", help="EC2 endpoint (default: AWS)")
    where.add_argument("--moto", action="store_true", help="read moto's recorded EC2 data")
    parser.add_argument("-o", "--output", type=Path, help="default: the shipped snapshot file")
    parser.add_argument("--source", help="where the data came from, for snapshots.json")
    args = parser.parse_args(argv)
    if args.moto:
        with moto_server() as url:
            entries = asyncio.run(snapshot(args.region, url))
        source = args.source or f"moto {version('moto')} recorded EC2 data"
    else:
        entries = asyncio.run(snapshot(args.region, args.endpoint_url))
        source = args.source or (args.endpoint_url or "EC2 API")
    text = json.dumps(entries, separators=(",", ":"), sort_keys=True).encode()
    output = args.output or DATA / snapshot_file_name(args.region)
    output.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    if args.output is None:
        index_path = DATA / "snapshots.json"
        index = json.loads(index_path.read_text()) if index_path.exists() else {}
        index[args.region] = {
            "source": source,
            "generatedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "prices": f"shipped on-demand table of {static_prices_date()}",
            "instanceTypes": str(len(entries)),
        }
        index_path.write_text(json.dumps(dict(sorted(index.items())), indent=1) + "\n")
    print(f"wrote {output}: {len(entries)} instance types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
