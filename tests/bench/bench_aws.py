"""The AWS provider against a moto server (no AWS account, no control plane): one JSON line.

A ThreadedMotoServer on loopback is seeded as the integration tests seed it (VPC, subnets in
three zones, a security group, the EKS AL2023 AMI parameters, the node role); an EC2NodeClass is
resolved, the full catalogue (moto's ~1,370 recorded types) is read, then `BENCH_AWS_CLAIMS`
identical NodeClaims (default 500) are launched through `AWSInstances.create`,
`BENCH_AWS_CONCURRENCY` at a time (default 50, the lifecycle controller's workers), as `karpy run`
launches them: equal CreateFleet requests are merged (`createFleetCalls`, `claimsPerCreateFleet`)
and each instance is then tagged with its NodeClaim.

Reported: `refreshSeconds` (DescribeInstanceTypes, offerings, spot prices), `rssMB` with the
catalogue loaded, `launchSeconds` to all launched, per-launch p50/p99, and AWS calls by API
(counted by a botocore `before-call` hook at the client seam). moto answers on the same two
cores, so the figures measure karpy and moto together.

The `karpy-run` case (`tests/bench/aws_system.py`) measures the whole system instead: `karpy run`
with PROVIDER=aws against a moto server, then with PROVIDER=kwok for the RSS baseline.
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import time
from collections.abc import Iterator
from typing import Any

from moto.server import ThreadedMotoServer

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.instances import AWSInstances, ClusterInfo
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.pricing import PricingProvider
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from tests.bench.aws_system import whole_system
from tests.integration.aws.conftest import REGION, CallCounter
from tests.integration.aws.test_launch import (
    AL2023,
    CLUSTER,
    DISCOVERY,
    K8S,
    ROLE,
    ZONES,
    World,
    claim_of,
    first_image,
    nodeclass_of,
    seed_parameter,
)

CLAIMS = int(os.environ.get("BENCH_AWS_CLAIMS", "500"))
CONCURRENCY = int(os.environ.get("BENCH_AWS_CONCURRENCY", "50"))
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _seed(clients: AWSClients, counter: CallCounter) -> World:
    tags = [{"Key": k, "Value": v} for k, v in DISCOVERY.items()]
    subnets: dict[str, str] = {}
    async with clients.client("ec2") as ec2:
        vpc = (await ec2.create_vpc(CidrBlock="10.0.0.0/16"))["Vpc"]["VpcId"]
        for i, zone in enumerate(ZONES):
            subnet = await ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.0.{i * 16}.0/20",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}],
            )
            subnets[zone] = subnet["Subnet"]["SubnetId"]
        group = await ec2.create_security_group(
            GroupName="nodes",
            Description="nodes",
            VpcId=vpc,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": tags}],
        )
    amis = {
        "amd64": await first_image(clients, "x86_64"),
        "arm64": await first_image(clients, "arm64"),
    }
    seed_parameter(AL2023.format(k=K8S, a="x86_64"), amis["amd64"])
    seed_parameter(AL2023.format(k=K8S, a="arm64"), amis["arm64"])
    async with clients.client("iam") as iam:
        await iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument="{}")
    return World(clients, subnets, str(group["GroupId"]), amis, counter)


async def _run(endpoint: str) -> dict[str, Any]:
    counter = CallCounter()
    clients = AWSClients(REGION, endpoint_url=endpoint, on_client=counter.hook)
    try:
        return await _measure(clients, counter)
    finally:
        await clients.close()


async def _measure(clients: AWSClients, counter: CallCounter) -> dict[str, Any]:
    world = await _seed(clients, counter)
    nodeclass: EC2NodeClass = (await world.resolver().resolve(nodeclass_of())).apply(nodeclass_of())
    before = _rss_mb()
    catalog = InstanceTypeProvider(clients, PricingProvider(clients), UnavailableOfferings())
    started = time.perf_counter()
    await catalog.refresh()
    refresh_seconds = time.perf_counter() - started
    types = await catalog.for_nodeclass(nodeclass)
    rss_catalog = _rss_mb()
    instances = AWSInstances(
        clients,
        ClusterInfo(name=CLUSTER, endpoint="https://bench.example", ca_bundle="Q0E="),
        unavailable=catalog.unavailable,
    )
    counter.calls.clear()
    gate = asyncio.Semaphore(CONCURRENCY)
    latencies: list[float] = []

    async def launch(i: int) -> None:
        async with gate:
            t0 = time.perf_counter()
            await instances.create(claim_of(f"bench-{i:04d}", f"uid-{i}"), nodeclass, types)
            latencies.append(time.perf_counter() - t0)

    started = time.perf_counter()
    await asyncio.gather(*(launch(i) for i in range(CLAIMS)))
    launch_seconds = time.perf_counter() - started
    launched = len(await instances.list())
    latencies.sort()
    fleets = counter.calls["ec2.CreateFleet"]
    return {
        # the case names what it launches, so a run at another concurrency is its own case
        "case": f"launch-{CLAIMS}-at-{CONCURRENCY}",
        "claims": CLAIMS,
        "launched": launched,
        "concurrency": CONCURRENCY,
        "instanceTypes": len(types),
        "refreshSeconds": round(refresh_seconds, 2),
        "rssMB": round(rss_catalog, 1),
        "catalogRssMB": round(rss_catalog - before, 1),
        "peakRssMB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "launchSeconds": round(launch_seconds, 2),
        "launchesPerSecond": round(CLAIMS / launch_seconds, 2),
        "p50LaunchSeconds": round(statistics.median(latencies), 3),
        "p99LaunchSeconds": round(
            latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 3
        ),
        "createFleetCalls": fleets,
        "claimsPerCreateFleet": round(CLAIMS / fleets, 1) if fleets else None,
        "awsCalls": dict(sorted(counter.calls.items())),
    }


def cases() -> Iterator[dict[str, Any]]:
    """`launch-N-at-C` (provider level) and `karpy-run` (whole system); `BENCH_AWS_CASE` picks
    one (`launch` or `karpy-run`)."""
    wanted = os.environ.get("BENCH_AWS_CASE")
    if wanted in (None, "", "launch"):
        yield from _launch_case()
    if wanted in (None, "", "karpy-run"):
        yield whole_system()


def _launch_case() -> Iterator[dict[str, Any]]:
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield asyncio.run(_run(f"http://{host}:{port}"))
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
