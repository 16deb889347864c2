"""Event-loop lag while a worker thread runs pure-Python CPU work (DESIGN principle 4).

Case `cpu-task-5s`: a 5-second pure-Python function runs through `run_off_loop` while the
loop (uvloop, as in `karpy run`) samples its own lag every 10 ms and serves a stream of small
callbacks; `lagP99Ms` is the 99th percentile of the lag (target <= 100 ms). `idle` is the same
measurement with no CPU work, for comparison.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import uvloop

from karpy.kube.offload import LoopLagMonitor, run_off_loop, shutdown_offload


def burn(seconds: float) -> int:
    deadline = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < deadline:
        for i in range(2000):
            total += (i * i) % 13
    return total


async def _measure(cpu_seconds: float, window: float) -> dict[str, Any]:
    monitor = LoopLagMonitor(interval=0.01, warn_threshold=10.0)
    sampler = asyncio.create_task(monitor.run())
    ticks = 0

    async def chatter() -> None:  # stands in for watch events and probes
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    talker = asyncio.create_task(chatter())
    started = time.perf_counter()
    if cpu_seconds:
        await run_off_loop(burn, cpu_seconds)
    else:
        await asyncio.sleep(window)
    seconds = time.perf_counter() - started
    sampler.cancel()
    talker.cancel()
    return {
        "seconds": round(seconds, 3),
        "samples": len(monitor.samples),
        "lagP50Ms": round(monitor.percentile(0.50) * 1000, 2),
        "lagP99Ms": round(monitor.percentile(0.99) * 1000, 2),
        "lagMaxMs": round(monitor.percentile(1.0) * 1000, 2),
        "loopTicksPerSecond": round(ticks / seconds),
    }


def _row(case: str, figures: dict[str, Any], target: float | None) -> dict[str, Any]:
    return {
        "case": case,
        "pods": 0,
        "nodes": 0,
        "cost": None,
        "lowerBound": None,
        "ratio": None,
        **figures,
        "targetLagP99Ms": target,
    }


def cases() -> Iterator[dict[str, Any]]:
    try:
        yield _row("idle", uvloop.run(_measure(0.0, 2.0)), None)
        yield _row("cpu-task-5s", uvloop.run(_measure(5.0, 0.0)), 100.0)
    finally:
        shutdown_offload()
