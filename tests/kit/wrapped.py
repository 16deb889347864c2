"""A base for API client wrappers that change one call and pass every other one through.

Tests inject timing at the client seam (hold a status write, slow a delete) by overriding the
one method; the rest of the client's surface reaches the real apiserver unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ClientWrapper"]


class ClientWrapper:
    """Delegates every attribute it does not define to `inner`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
