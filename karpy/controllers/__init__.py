"""karpy's controllers, one package per area; each exposes `register(ctx: ControllerContext)`.

`registrars()` lists them in the order `karpy run` calls them. To add an area, write
`karpy/controllers/<area>/__init__.py` with a `register(ctx)` that builds the area's controllers
from the context and adds them with `ctx.add(...)`, then list it in `registrars()`.
"""

from __future__ import annotations

from collections.abc import Callable

from karpy.controllers.context import ControllerContext

__all__ = ["ControllerContext", "Registrar", "register_all", "registrars"]

Registrar = Callable[[ControllerContext], None]


def registrars() -> list[Registrar]:
    """Every area's `register`, in registration order (imported here, not at package import,
    so that importing one controller module does not load them all)."""
    from karpy.controllers import (
        capacitybuffer,
        disruption,
        garbagecollection,
        metrics,
        nodeoverlay,
        nodepool,
        provisioning,
        schedulingconfig,
        static,
    )
    from karpy.controllers.node import health as node_health
    from karpy.controllers.node import termination as node_termination
    from karpy.controllers.nodeclaim import disruption as nodeclaim_disruption
    from karpy.controllers.nodeclaim import expiration, lifecycle, podevents
    from karpy.controllers.nodeclaim import termination as nodeclaim_termination

    return [
        provisioning.register,
        lifecycle.register,
        nodeclaim_termination.register,
        expiration.register,
        nodeclaim_disruption.register,
        podevents.register,
        node_termination.register,
        node_health.register,
        nodepool.register,
        nodeoverlay.register,
        capacitybuffer.register,
        static.register,
        schedulingconfig.register,
        disruption.register,
        garbagecollection.register,
        metrics.register,
    ]


def register_all(ctx: ControllerContext) -> None:
    """Build and add every area's controllers."""
    for register in registrars():
        register(ctx)
