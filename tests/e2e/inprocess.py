"""karpy with the kwok provider in a thread of the test process, for faults a `karpy run`
subprocess cannot take: here the kwok simulator's `kubelet_down` seam stops chosen nodes'
kubelets.

It wires what `karpy run` wires (the shared informers, every controller area, the simulator)
without leader election or servers, on its own event loop in a thread, so a test can keep
using the synchronous kubectl helpers while karpy runs.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Mapping
from types import TracebackType

from karpy.apis.descriptors import KWOKNODECLASSES, NODECLAIMS
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.cloudprovider.kwok.simulator import KwokSimulator
from karpy.controllers import ControllerContext, register_all
from karpy.kube import Client, EventRecorder
from karpy.kube.manager import Manager, ManagerOptions
from karpy.operator import COMPONENT, register_informers
from karpy.settings import load_settings
from karpy.state import Cluster, nomination_window

__all__ = ["InProcessKarpy"]


class InProcessKarpy:
    """`with InProcessKarpy(kubeconfig) as karpy:` runs karpy until the block ends; add node
    names to `karpy.kubelets_down` to stop their kubelets."""

    def __init__(self, kubeconfig: str, settings: Mapping[str, str] | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.settings = {
            "PROVIDER": "kwok",
            "KUBECONFIG": kubeconfig,
            "DISABLE_LEADER_ELECTION": "true",
            **(settings or {}),
        }
        self.kubelets_down: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._manager: Manager | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="karpy-in-process", daemon=True)

    def __enter__(self) -> InProcessKarpy:
        self._thread.start()
        if not self._ready.wait(60) or self._error is not None:
            self.__exit__(None, None, None)
            raise RuntimeError(f"in-process karpy did not start: {self._error!r}")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._manager is not None:
            self._loop.call_soon_threadsafe(self._manager.stop)
        self._thread.join(60)
        if self._error is not None and exc is None:
            raise RuntimeError("in-process karpy failed") from self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as err:  # reported by __enter__ / __exit__
            self._error = err
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        settings = load_settings(self.settings)
        client = await Client.connect(kubeconfig=self.kubeconfig)
        identity = f"in-process-{uuid.uuid4().hex[:6]}"
        manager = Manager(
            client=client,
            options=ManagerOptions(metrics_port=None, health_probe_port=None, handle_signals=False),
        )
        events = EventRecorder(client, component=COMPONENT, instance=identity)
        manager.add(events)
        provider = KwokCloudProvider(
            client=client, cache=manager.cache, instance_types=kwok_instance_types()
        )
        ctx = ControllerContext(
            settings=settings,
            client=client,
            manager=manager,
            events=events,
            clock=manager.clock,
            identity=identity,
            cloud_provider=provider,
            nodeclasses=(KWOKNODECLASSES,),
            cluster=Cluster(
                manager.cache,
                clock=manager.clock,
                nomination_window=nomination_window(settings.batch.max_duration.total_seconds()),
            ),
        )
        register_informers(ctx)
        simulator = KwokSimulator(
            client=client,
            cache=manager.cache,
            provider=provider,
            nodeclaims=NODECLAIMS,
            clock=manager.clock,
            kubelet_down=self.kubelets_down.__contains__,
        )
        for reconciler in simulator.reconcilers():
            ctx.add(reconciler)
        register_all(ctx)
        self._manager = manager
        self._ready.set()
        try:
            await manager.run()
        finally:
            await client.close()
