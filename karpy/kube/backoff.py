"""Jittered exponential backoff for loops that retry forever (watches, leader election)."""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    """`initial * factor**n` capped at `maximum`; each delay stretched by up to (1 + `jitter`)x."""

    def __init__(
        self,
        *,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.5,
    ) -> None:
        if initial <= 0 or maximum < initial or factor < 1 or jitter < 0:
            raise ValueError("need 0 < initial <= maximum, factor >= 1, jitter >= 0")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._current = initial

    def next(self) -> float:
        """The delay to wait now; the following one will be longer."""
        delay = self._current
        self._current = min(self.maximum, self._current * self.factor)
        return delay * (1.0 + random.uniform(0.0, self.jitter))

    def reset(self) -> None:
        self._current = self.initial
