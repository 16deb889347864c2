"""karpy's controllers, one package per area; each exposes `register(ctx: ControllerContext)`.

`REGISTRARS` lists them in the order `karpy run` calls them. To add an area, write
`karpy/controllers/<area>/__init__.py` with a `register(ctx)` that builds the area's controllers
from the context and adds them with `ctx.add_controller(...)`, then append it here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from karpy.controllers.context import ControllerContext

__all__ = ["AREAS", "ControllerContext", "Registrar", "register_all"]

Registrar = Callable[[ControllerContext], None]

AREAS: tuple[str, ...] = (
    "karpy.controllers.provisioning",
    "karpy.controllers.nodeclaim.lifecycle",
    "karpy.controllers.nodeclaim.termination",
    "karpy.controllers.nodeclaim.expiration",
    "karpy.controllers.nodeclaim.disruption",
    "karpy.controllers.nodeclaim.podevents",
    "karpy.controllers.node.termination",
    "karpy.controllers.nodepool",
    "karpy.controllers.disruption",
    "karpy.controllers.garbagecollection",
    "karpy.controllers.metrics",
)
"""Packages whose `register(ctx)` builds their controllers, in registration order."""


def registrars() -> list[Registrar]:
    """Every area's `register`; an area not written yet (no module) is skipped."""
    out: list[Registrar] = []
    for name in AREAS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is not None and name.startswith(err.name):
                continue  # the area does not exist yet
            raise
        register = getattr(module, "register", None)
        if register is not None:
            out.append(register)
    return out


def register_all(ctx: ControllerContext) -> None:
    """Build and add every area's controllers."""
    for register in registrars():
        register(ctx)
