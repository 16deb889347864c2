"""The catalogue refresh leaves the event loop free: the full moto catalogue (about 1,400 types,
6,000 offerings, 6,000 spot prices) is fetched, parsed and built while a sampler wakes every
10 ms. Lease renewals (retried every 2 s, renew deadline 10 s), probes and watches run on that
loop, so how late the sampler wakes bounds how late they can be.

Two figures per gap between wake-ups: wall-clock lag (depends on the machine's load: a loaded
2-core machine leaves every thread waiting for a core) and CPU time the loop thread itself spent
(load-independent: what karpy ran on the loop). Before the build and the big responses moved to
worker threads, one gap held 0.6 s of loop CPU (3-6 s of wall time under load).

A full garbage collection runs in whichever thread allocates when it falls due and walks the
whole heap, here including the in-process moto server's catalogue: 0.1-0.3 s on this machine.
It is timed apart (``gc.callbacks``) and reported, not counted as code karpy ran on the loop."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Iterator

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


class LoopCollections:
    """CPU time the loop thread spent in garbage collections, for as long as it is installed."""

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.seconds = 0.0
        self._started: float | None = None

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != self.loop_thread:
            return
        if phase == "start":
            self._started = time.thread_time()
        elif self._started is not None:
            self.seconds += time.thread_time() - self._started
            self._started = None


@pytest.fixture
def loop_collections() -> Iterator[LoopCollections]:
    watch = LoopCollections()
    gc.callbacks.append(watch)
    yield watch
    gc.callbacks.remove(watch)


async def sample(gaps: list[tuple[float, float, float]], collections: LoopCollections) -> None:
    """Append (wall lag, loop-thread CPU outside collections, loop-thread CPU in collections)
    for every wake-up until cancelled."""
    while True:
        wall, cpu, collected = time.perf_counter(), time.thread_time(), collections.seconds
        await asyncio.sleep(INTERVAL)
        in_gc = collections.seconds - collected
        own_cpu = time.thread_time() - cpu - in_gc
        gaps.append((time.perf_counter() - wall - INTERVAL, own_cpu, in_gc))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def test_refresh_and_first_build_do_not_block_the_loop(
    moto_server: str,
    call_counter: CallCounter,
    record_property: pytest.RecordProperty,
    loop_collections: LoopCollections,
) -> None:
    clients = AWSClients(REGION, endpoint_url=moto_server, on_client=call_counter.hook)
    provider = InstanceTypeProvider(clients, PricingProvider(clients), UnavailableOfferings())
    gaps: list[tuple[float, float, float]] = []
    sampler = asyncio.create_task(sample(gaps, loop_collections))
    try:
        started = time.perf_counter()
        await provider.refresh(force=True)
        types = await provider.list(zones={"us-east-1a"})
        elapsed = time.perf_counter() - started
    finally:
        sampler.cancel()
        await clients.close()
    lags = [lag for lag, _, _ in gaps]
    cpus = [cpu for _, cpu, _ in gaps]
    collections = [in_gc for _, _, in_gc in gaps]
    figures = {
        "refresh_and_build_seconds": round(elapsed, 2),
        "loop_lag_p99": round(percentile(lags, 0.99), 3),
        "loop_lag_max": round(max(lags), 3),
        "loop_cpu_per_gap_max": round(max(cpus), 3),
        "loop_cpu_total": round(sum(cpus), 2),
        "loop_gc_per_gap_max": round(max(collections), 3),
        "loop_gc_total": round(sum(collections), 2),
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
