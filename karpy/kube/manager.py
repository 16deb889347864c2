"""The manager: runs every runnable of the process in controller-runtime's groups.

- **caches** (the informer `Cache`) and **others** (HTTP servers, event recorder, anything with
  `needs_leader_election = False`) run on every replica from the start;
- **leader** runnables (controllers) start only after this replica holds the lease and every
  cache has synced.

Probes: `/healthz` answers while the loop runs; `/readyz` only once every informer has synced
(standby replicas are ready too). `/metrics` serves `karpy.kube.metrics.REGISTRY`.

Shutdown (SIGTERM, SIGINT or `stop()`): leader runnables are told to stop and given the deadline
to finish in-flight reconciles, then the lease is released, then caches and servers stop.
Losing the lease is fatal: leader runnables are cancelled at once and `run()` raises
`LeaderElectionLostError`, so the process exits and restarts as a standby.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from karpy.kube import metrics
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.clock import Clock, RealClock
from karpy.kube.errors import KubeError
from karpy.kube.leaderelection import LeaderElectionConfig, LeaderElector
from karpy.kube.memory import freeze_heap
from karpy.kube.offload import LoopLagMonitor

__all__ = [
    "LeaderElectionLostError",
    "Manager",
    "ManagerOptions",
    "Runnable",
]

log = structlog.get_logger("karpy.kube.manager")

Check = Callable[[], bool | Awaitable[bool]]


@runtime_checkable
class Runnable(Protocol):
    """Runs until `stop` is set, then finishes its in-flight work and returns."""

    async def start(self, stop: asyncio.Event) -> None: ...


class LeaderElectionLostError(KubeError):
    """This replica stopped holding the lease; the process must exit."""


@dataclass(frozen=True, slots=True)
class ManagerOptions:
    """Ports (0: any free port; None: no server), leader election (None: always lead)."""

    bind_address: str = "0.0.0.0"
    metrics_port: int | None = 8080
    health_probe_port: int | None = 8081
    leader_election: LeaderElectionConfig | None = None
    shutdown_timeout: float = 25.0
    lag_warn_threshold: float = 0.1
    handle_signals: bool = True


class _Group:
    """Runnables started together and stopped by one event."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.runnables: list[Runnable] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.stop = asyncio.Event()

    def start(self, group: asyncio.TaskGroup, runnable: Runnable) -> None:
        self.tasks.append(
            group.create_task(runnable.start(self.stop), name=f"{self.name}:{runnable!r}")
        )

    async def shutdown(self, grace: float) -> None:
        self.stop.set()
        live = [t for t in self.tasks if not t.done()]
        if not live:
            return
        _, pending = await asyncio.wait(live, timeout=max(grace, 0.0))
        for task in pending:
            log.warning("runnable did not stop in time; cancelling", runnable=task.get_name())
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()


class Manager:
    """Owns the client, the shared cache, the servers and every runnable of the process."""

    def __init__(
        self,
        *,
        client: Client,
        options: ManagerOptions | None = None,
        cache: Cache | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry = metrics.REGISTRY,
        election_client: Client | None = None,
    ) -> None:
        self.client = client
        self.options = options or ManagerOptions()
        self.clock = clock or RealClock()
        self.cache = cache or Cache(client, clock=self.clock)
        self.registry = registry
        self.lag = LoopLagMonitor(warn_threshold=self.options.lag_warn_threshold)
        self.elector: LeaderElector | None = None
        if self.options.leader_election is not None:
            self.elector = LeaderElector(
                client=election_client or client,
                config=self.options.leader_election,
                clock=self.clock,
            )
        self.elected = asyncio.Event()
        self._others = _Group("others")
        self._leaders = _Group("leader")
        self._healthz: dict[str, Check] = {"ping": lambda: True}
        self._readyz: dict[str, Check] = {"informers-synced": self.cache.has_synced}
        self._stop_requested = asyncio.Event()
        self._lost = False
        self._hold_task: asyncio.Task[None] | None = None
        self._runners: list[web.AppRunner] = []
        self.metrics_address: tuple[str, int] | None = None
        self.probe_address: tuple[str, int] | None = None

    # -- registration -----------------------------------------------------------------------------

    def add(self, runnable: Runnable, *, leader_only: bool | None = None) -> None:
        """Add a runnable; by default leader-only if it says `needs_leader_election = True`."""
        if leader_only is None:
            leader_only = bool(getattr(runnable, "needs_leader_election", False))
        (self._leaders if leader_only else self._others).runnables.append(runnable)

    def add_all(self, runnables: Iterable[Runnable]) -> None:
        for runnable in runnables:
            self.add(runnable)

    def add_healthz_check(self, name: str, check: Check) -> None:
        self._healthz[name] = check

    def add_readyz_check(self, name: str, check: Check) -> None:
        self._readyz[name] = check

    @property
    def is_leader(self) -> bool:
        return self.elected.is_set() and not self._lost

    def stop(self) -> None:
        """Begin a graceful shutdown."""
        self._stop_requested.set()

    # -- HTTP -------------------------------------------------------------------------------------

    async def _run_checks(self, checks: dict[str, Check]) -> tuple[bool, str]:
        lines: list[str] = []
        healthy = True
        for name, check in checks.items():
            try:
                result = check()
                ok = bool(await result) if isinstance(result, Awaitable) else bool(result)
            except Exception as exc:
                ok = False
                name = f"{name}: {exc}"
            healthy &= ok
            lines.append(f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}")
        return healthy, "\n".join(lines) + "\n"

    def _probe_handler(
        self, checks: dict[str, Check]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            healthy, detail = await self._run_checks(checks)
            verbose = "verbose" in request.query
            body = detail if (verbose or not healthy) else "ok"
            return web.Response(status=200 if healthy else 500, text=body)

        return handle

    async def _metrics(self, request: web.Request) -> web.Response:
        payload = generate_latest(self.registry)
        return web.Response(body=payload, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _serve(self, app: web.Application, port: int) -> tuple[str, int]:
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.options.bind_address, port, reuse_address=True)
        await site.start()
        self._runners.append(runner)
        address = runner.addresses[0]
        return str(address[0]), int(address[1])

    async def _start_servers(self) -> None:
        opts = self.options
        if opts.metrics_port is not None:
            app = web.Application()
            app.router.add_get("/metrics", self._metrics)
            self.metrics_address = await self._serve(app, opts.metrics_port)
            log.info(
                "serving metrics", address=f"{self.metrics_address[0]}:{self.metrics_address[1]}"
            )
        if opts.health_probe_port is not None:
            app = web.Application()
            app.router.add_get("/healthz", self._probe_handler(self._healthz))
            app.router.add_get("/readyz", self._probe_handler(self._readyz))
            self.probe_address = await self._serve(app, opts.health_probe_port)
            log.info("serving probes", address=f"{self.probe_address[0]}:{self.probe_address[1]}")

    async def _stop_servers(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    # -- running ----------------------------------------------------------------------------------

    def _install_signals(self) -> list[signal.Signals]:
        if not self.options.handle_signals:
            return []
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread, or a platform without signal support
        return installed

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info("received signal; shutting down gracefully", signal=sig.name)
        self.stop()

    async def _lead(self, group: asyncio.TaskGroup) -> None:
        if self.elector is not None:
            await self.elector.acquire()
            self._hold_task = group.create_task(self._hold(), name="leader-election-renew")
        self.elected.set()
        await self.cache.wait_for_sync()
        if self._stop_requested.is_set():
            return
        log.info("starting leader-only runnables", count=len(self._leaders.runnables))
        for runnable in self._leaders.runnables:
            self._leaders.start(group, runnable)

    async def _freeze_after_sync(self) -> None:
        await self.cache.wait_for_sync()
        log.info("caches synced; heap frozen", objects=freeze_heap())

    async def _hold(self) -> None:
        assert self.elector is not None
        await self.elector.hold()
        if self._stop_requested.is_set():
            return
        self._lost = True
        self._leaders.cancel()
        self.stop()

    async def run(self) -> None:
        """Run until stopped; raises `LeaderElectionLostError` if the lease was lost."""
        signals = self._install_signals()
        deadline_budget = self.options.shutdown_timeout
        try:
            await self._start_servers()
            async with asyncio.TaskGroup() as group:
                lag_task = group.create_task(self.lag.run(), name="loop-lag")
                cache_stop = asyncio.Event()
                cache_task = group.create_task(self.cache.start(cache_stop), name="cache")
                freeze_task = group.create_task(self._freeze_after_sync(), name="freeze-heap")
                for runnable in self._others.runnables:
                    self._others.start(group, runnable)
                lead_task = group.create_task(self._lead(group), name="leader")
                await self._stop_requested.wait()
                started = self.clock.now()
                lead_task.cancel()
                await self._leaders.shutdown(deadline_budget)
                if self._hold_task is not None:
                    self._hold_task.cancel()
                if self.elector is not None and not self._lost:
                    await self.elector.release()
                remaining = deadline_budget - (self.clock.now() - started)
                await self._others.shutdown(remaining)
                cache_stop.set()
                await asyncio.wait({cache_task}, timeout=max(remaining, 1.0))
                cache_task.cancel()
                freeze_task.cancel()
                lag_task.cancel()
        finally:
            await self._stop_servers()
            loop = asyncio.get_running_loop()
            for sig in signals:
                loop.remove_signal_handler(sig)
        if self._lost:
            raise LeaderElectionLostError("leader election lost")
        log.info("manager stopped")
