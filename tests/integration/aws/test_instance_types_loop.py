"""The catalogue refresh leaves the event loop free: the full moto catalogue (about 1,400 types,
6,000 offerings, 6,000 spot prices) is fetched, parsed and built while a sampler wakes every
10 ms. Lease renewals (retried every 2 s, renew deadline 10 s), probes and watches run on that
loop, so how late the sampler wakes bounds how late they can be.

Two figures per gap between wake-ups: wall-clock lag (depends on the machine's load: a loaded
2-core machine leaves every thread waiting for a core) and CPU time the loop thread itself spent
(load-independent: what karpy ran on the loop). Before the build and the big responses moved to
worker threads, one gap held 0.6 s of loop CPU (3-6 s of wall time under load)."""

from __future__ import annotations

import asyncio
import time

import pytest

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.instancetypes import InstanceTypeProvider
from karpy.cloudprovider.aws.pricing import PricingProvider
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from tests.integration.aws.conftest import REGION, CallCounter

INTERVAL = 0.01
MAX_LOOP_CPU = 0.2
"""Loop-thread CPU between two wake-ups (was 0.6 s: the whole build ran in one callback)."""
MAX_LAG = 5.0
"""Wall-clock lag, generous for a loaded machine: half the lease renew deadline."""


async def sample(gaps: list[tuple[float, float]]) -> None:
    """Append (wall lag, loop-thread CPU) for every wake-up until cancelled."""
    while True:
        wall, cpu = time.perf_counter(), time.thread_time()
        await asyncio.sleep(INTERVAL)
        gaps.append((time.perf_counter() - wall - INTERVAL, time.thread_time() - cpu))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def test_refresh_and_first_build_do_not_block_the_loop(
    moto_server: str, call_counter: CallCounter, record_property: pytest.RecordProperty
) -> None:
    clients = AWSClients(REGION, endpoint_url=moto_server, on_client=call_counter.hook)
    provider = InstanceTypeProvider(clients, PricingProvider(clients), UnavailableOfferings())
    gaps: list[tuple[float, float]] = []
    sampler = asyncio.create_task(sample(gaps))
    try:
        started = time.perf_counter()
        await provider.refresh(force=True)
        types = await provider.list(zones={"us-east-1a"})
        elapsed = time.perf_counter() - started
    finally:
        sampler.cancel()
        await clients.close()
    lags = [lag for lag, _ in gaps]
    cpus = [cpu for _, cpu in gaps]
    figures = {
        "refresh_and_build_seconds": round(elapsed, 2),
        "loop_lag_p99": round(percentile(lags, 0.99), 3),
        "loop_lag_max": round(max(lags), 3),
        "loop_cpu_per_gap_max": round(max(cpus), 3),
        "loop_cpu_total": round(sum(cpus), 2),
        "samples": len(gaps),
    }
    for name, value in figures.items():
        record_property(name, value)
    print("catalogue refresh and build:", figures)
    assert len(types) > 1000
    assert call_counter.calls["ec2.DescribeInstanceTypes"] >= 1
    assert call_counter.calls["ec2.DescribeSpotPriceHistory"] >= 1
    assert max(cpus) < MAX_LOOP_CPU, figures
    assert max(lags) < MAX_LAG, figures


async def test_concurrent_first_lists_build_once(moto_server: str) -> None:
    """Provisioning asks for every NodePool's types at once at start-up: one refresh and one
    build serve them all."""
    counter = CallCounter()
    clients = AWSClients(REGION, endpoint_url=moto_server, on_client=counter.hook)
    provider = InstanceTypeProvider(clients, PricingProvider(clients), UnavailableOfferings())
    try:
        results = await asyncio.gather(*(provider.list(zones={"us-east-1b"}) for _ in range(5)))
    finally:
        await clients.close()
    assert counter.calls["ec2.DescribeAvailabilityZones"] == 1
    first = results[0]
    assert len(first) > 1000
    # The same InstanceType objects: built once, not once per caller.
    for result in results:
        assert len(result) == len(first)
        assert all(a is b for a, b in zip(result, first, strict=True))
