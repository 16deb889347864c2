"""Package attributes loaded from their modules at first use (PEP 562 `__getattr__`).

A package that re-exports names of heavy modules (the API models, the informer-backed cluster
state) makes every importer pay for all of them; with `lazy_attributes` a name's module is
imported only when the name is first read, and the value is then kept in the package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: each name of `homes` is read from the module
    named beside it (absolute, or relative to `package` when it starts with a dot)."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        namespace[name] = value
        return value

    return __getattr__
