"""The one way to wire a controller: a reconciler declares what wakes it, the builder makes the
`Controller` (in the spirit of controller-runtime's builder).

A reconciler has a `name` (the controller's name in logs and metrics), a `clock`, a
`setup(builder)` that says what it watches, how events map to keys, how many workers it runs and
whether it runs only on the leader, and `reconcile(key)`. `build(reconciler)` returns the
runnable controller; `ControllerContext.add` builds and adds it to the manager.

    class Expiration:
        name = "nodeclaim.expiration"

        def setup(self, builder: Builder[str]) -> None:
            builder.watches(self.nodeclaims, predicate=alive).workers(10).log_kind("NodeClaim")

        async def reconcile(self, name: str) -> Result | None: ...
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from karpy.kube.clock import Clock
from karpy.kube.controller import Controller, Reconcile, Result
from karpy.kube.informer import HandlerFuncs, Informer
from karpy.kube.ratelimit import RateLimiter

__all__ = ["Builder", "Enqueuer", "Reconciler", "build"]

JSON = dict[str, Any]
K = TypeVar("K", bound=Hashable)
ChangeMapper = Callable[[JSON | None, JSON | None], "K | None"]


class Reconciler(Protocol[K]):
    """A controller's logic: its name, its clock, what wakes it, and the reconcile of one key."""

    @property
    def name(self) -> str: ...

    @property
    def clock(self) -> Clock: ...

    def setup(self, builder: Builder[K]) -> None: ...

    async def reconcile(self, key: K, /) -> Result | None: ...


class Enqueuer(Generic[K]):
    """Adds keys to a controller's queue from outside its watches (another controller, a
    subscription); keys added before the controller is built are queued when it is."""

    def __init__(self) -> None:
        self._controller: Controller[K] | None = None
        self._pending: list[tuple[K, float]] = []

    def bind(self, controller: Controller[K]) -> None:
        self._controller = controller
        for key, delay in self._pending:
            controller.enqueue_after(key, delay) if delay > 0 else controller.enqueue(key)
        self._pending.clear()

    def add(self, key: K) -> None:
        if self._controller is None:
            self._pending.append((key, 0.0))
        else:
            self._controller.enqueue(key)

    def add_after(self, key: K, delay: float) -> None:
        if self._controller is None:
            self._pending.append((key, delay))
        else:
            self._controller.enqueue_after(key, delay)

    @property
    def stopping(self) -> bool:
        """Whether the controller was told to stop (its in-flight reconciles still finish)."""
        return self._controller is not None and self._controller.stopping


class Builder(Generic[K]):
    """What `setup` declares; `complete` turns it into a `Controller`."""

    def __init__(self, name: str, *, clock: Clock | None = None) -> None:
        self.name = name
        self.clock = clock
        self._workers = 1
        self._leader_only = True
        self._log_kind: str | None = None
        self._timeout: float | None = None
        self._rate_limiter: RateLimiter[K] | None = None
        self._initial: list[K] = []
        self._watches: list[Callable[[Controller[K]], None]] = []
        self._enqueuers: list[Enqueuer[K]] = []

    def watches(
        self,
        informer: Informer,
        *,
        mapper: Callable[[JSON], K | Iterable[K] | None] | None = None,
        predicate: Callable[[JSON], bool] | None = None,
    ) -> Builder[K]:
        """Enqueue the key of each object `informer` reports (by default the object's own)."""
        self._watches.append(lambda c: c.watch(informer, mapper=mapper, predicate=predicate))
        return self

    def watches_changes(self, informer: Informer, mapper: ChangeMapper[K]) -> Builder[K]:
        """Enqueue what `mapper(old, new)` returns for updates (`new` None: a deletion);
        for when the transition, not the object, decides. Adds are not reported."""

        def attach(controller: Controller[K]) -> None:
            def handle(old: JSON | None, new: JSON | None) -> None:
                key = mapper(old, new)
                if key is not None:
                    controller.enqueue(key)

            controller.watch_handler(
                informer,
                HandlerFuncs(update=handle, delete=lambda obj: handle(obj, None)),
            )

        self._watches.append(attach)
        return self

    def workers(self, count: int) -> Builder[K]:
        self._workers = count
        return self

    def leader_only(self, value: bool = True) -> Builder[K]:
        """Run on the elected leader only (the default) or on every replica."""
        self._leader_only = value
        return self

    def log_kind(self, kind: str) -> Builder[K]:
        """Log each key as a reference to an object of `kind` (`{"NodeClaim": {"name": ...}}`)."""
        self._log_kind = kind
        return self

    def reconcile_timeout(self, seconds: float) -> Builder[K]:
        self._timeout = seconds
        return self

    def rate_limiter(self, limiter: RateLimiter[K]) -> Builder[K]:
        self._rate_limiter = limiter
        return self

    def initial_keys(self, *keys: K) -> Builder[K]:
        """Keys reconciled as soon as the controller starts."""
        self._initial.extend(keys)
        return self

    def enqueuer(self, enqueuer: Enqueuer[K] | None = None) -> Enqueuer[K]:
        """A handle (new, or the one given) to add keys to this controller's queue from
        elsewhere; keys it took before the controller was built are queued then."""
        enqueuer = enqueuer or Enqueuer[K]()
        self._enqueuers.append(enqueuer)
        return enqueuer

    def complete(self, reconcile: Reconcile[K]) -> Controller[K]:
        controller = Controller[K](
            name=self.name,
            reconcile=reconcile,
            workers=self._workers,
            rate_limiter=self._rate_limiter,
            clock=self.clock,
            log_kind=self._log_kind,
            reconcile_timeout=self._timeout,
            initial_keys=self._initial,
            leader_only=self._leader_only,
        )
        for attach in self._watches:
            attach(controller)
        for enqueuer in self._enqueuers:
            enqueuer.bind(controller)
        return controller


def build(reconciler: Reconciler[K]) -> Controller[K]:
    """The controller of `reconciler`, on the reconciler's clock."""
    builder = Builder[K](reconciler.name, clock=reconciler.clock)
    reconciler.setup(builder)
    return builder.complete(reconciler.reconcile)


def singleton(builder: Builder[str]) -> Builder[str]:
    """A one-key loop (provisioner, disruption, garbage collection): its own name is the key,
    reconciled at start and then whenever the reconcile asks."""
    return builder.initial_keys(builder.name).workers(1)
